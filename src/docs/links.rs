//! Where things are in the site: a table's page file and a column's anchor on it. Every page
//! and the search index link through these.

use std::fmt::Write;

/// The file name of `table`'s page, under `tables/`.
pub fn table_file(table: &str) -> String {
    format!("{}.html", table.replace(['/', '\\'], "_"))
}

/// The anchor of `column` on its table's page: `col-` and the name, every character outside
/// `[A-Za-z0-9_-]` as `.XX` (hex of its UTF-8 bytes), so any column name makes a plain URL.
pub fn column_anchor(column: &str) -> String {
    let mut out = String::from("col-");
    for b in column.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' => out.push(b as char),
            b => {
                let _ = write!(out, ".{b:02x}");
            }
        }
    }
    out
}
