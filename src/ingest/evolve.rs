//! Bronze schema evolution: columns that source files have and the spec does not declare.
//!
//! Under `schema_evolution = "add_columns"` each such column is added to the bronze table as
//! an optional string column (a new field id; rows loaded before read NULL). A column once
//! added stays: later runs load it from the files that have it, whatever the policy, so a
//! bronze table never loses a column.

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::Path;

use iceberg::spec::TableMetadata;
use serde::de::IgnoredAny;

use super::json_keys::object_keys;
use super::part::Part;
use crate::error::{Error, Result};
use crate::spec::{ColumnSpec, ColumnType, Format, IngestJob, LINEAGE_COLUMNS};

/// `job` with the columns earlier runs added to its live table (after the declared ones).
pub fn with_added_columns(job: &IngestJob, live: Option<&TableMetadata>) -> IngestJob {
    let mut job = job.clone();
    let Some(live) = live else {
        return job;
    };
    for field in live.current_schema().as_struct().fields() {
        let known = job.columns.iter().any(|c| c.name == field.name)
            || LINEAGE_COLUMNS.contains(&field.name.as_str());
        if known {
            continue;
        }
        if let Some(ty) = ColumnType::from_iceberg(&field.field_type) {
            job.columns.push(ColumnSpec {
                name: field.name.clone(),
                ty,
                required: false,
                added: true,
            });
        }
    }
    job
}

/// A file's index in the job's file list, and its column names with the line each was first
/// seen on.
type FileColumns = (usize, Vec<(String, u64)>);

/// The most columns one run may add to a table: a file whose records carry thousands of
/// unknown keys (generated keys, a map written as an object) is a mistake to stop at, not
/// thousands of columns to add.
pub const MAX_ADDED_COLUMNS: usize = 500;

/// Adds to `job` (as string columns) every column of `files` (each read from its start) it
/// does not have, in the order first seen; returns their names. More than
/// [`MAX_ADDED_COLUMNS`] is an error naming the file and line where the limit was passed.
pub fn add_new_columns(job: &mut IngestJob, files: &[Part]) -> Result<Vec<String>> {
    // Files are scanned in parallel (one thread per core), then merged in file order.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len())
        .max(1);
    let scanned: Vec<Result<Vec<FileColumns>>> = std::thread::scope(|scope| {
        let job = &*job;
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    files
                        .iter()
                        .enumerate()
                        .skip(t)
                        .step_by(threads)
                        .map(|(i, part)| Ok((i, file_columns(job, part)?)))
                        .collect::<Result<Vec<_>>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Internal("a column scan panicked".into())))
            })
            .collect()
    });
    let mut per_file = Vec::new();
    for part in scanned {
        per_file.extend(part?);
    }
    per_file.sort_by_key(|(i, _)| *i);
    let mut found: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (i, names) in per_file {
        for (name, line) in names {
            let known = job.columns.iter().any(|c| c.name == name) || seen.contains(&name);
            if known || LINEAGE_COLUMNS.contains(&name.as_str()) {
                continue;
            }
            if found.len() == MAX_ADDED_COLUMNS {
                return Err(Error::BadRecord {
                    file: files[i].path.clone(),
                    line,
                    reason: format!(
                        "key `{name}` would be column {} added to {} in this run (schema_evolution = \"add_columns\"); at most {MAX_ADDED_COLUMNS} are added at once: declare the keys you want in the schema and set schema_evolution = \"ignore\" for the rest, or fix the file",
                        MAX_ADDED_COLUMNS + 1,
                        job.table
                    ),
                });
            }
            seen.insert(name.clone());
            found.push(name);
        }
    }
    for name in &found {
        job.columns.push(ColumnSpec {
            name: name.clone(),
            ty: ColumnType::String,
            required: false,
            added: true,
        });
    }
    Ok(found)
}

/// The column names a source file has, with the line each was first seen on: its CSV header
/// (line 1), or every key of its JSON objects from the part's start. Lines that are not
/// objects, or not UTF-8, are the loader's to report (with their line, or to quarantine); a
/// byte-order mark is skipped.
fn file_columns(job: &IngestJob, part: &Part) -> Result<Vec<(String, u64)>> {
    let reader = part.open()?;
    match job.format {
        Format::Csv => {
            let mut csv = csv::ReaderBuilder::new()
                .has_headers(false)
                .delimiter(job.csv.delimiter)
                .quote(job.csv.quote)
                .from_reader(reader);
            // Read like the loader reads it: bytes, lossy UTF-8.
            let mut record = csv::ByteRecord::new();
            let has = csv.read_byte_record(&mut record).unwrap_or(false);
            Ok(if has {
                header_names(&csv::StringRecord::from_byte_record_lossy(record))
                    .into_iter()
                    .filter(|h| !h.is_empty())
                    .map(|h| (h, 1))
                    .collect()
            } else {
                Vec::new()
            })
        }
        Format::Json => json_columns(&part.path, reader, part.start.lines_before),
    }
}

/// Every key of a JSON Lines file's objects (read after its first `lines_before` lines), with
/// the line each was first seen on. Only records that parse whole count: a broken line adds
/// none, as the loader adds no value from it.
fn json_columns(
    path: &Path,
    mut reader: impl BufRead,
    lines_before: u64,
) -> Result<Vec<(String, u64)>> {
    let mut names = Vec::new();
    let mut seen = BTreeSet::new();
    let mut line = Vec::new();
    let mut line_no = lines_before;
    let mut spans = Vec::new();
    let mut last: Vec<String> = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let Ok(text) = std::str::from_utf8(&line) else {
            continue;
        };
        let text = if line_no == 1 {
            text.strip_prefix('\u{feff}').unwrap_or(text)
        } else {
            text
        };
        // Most records have the keys of the one before: a byte scan tells so
        // without decoding; a record with a key not seen yet is decoded properly.
        let scanned = object_keys(text.as_bytes(), &mut spans);
        if scanned
            && spans.iter().enumerate().all(|(i, &(s, e))| {
                let key = &text[s..e];
                last.get(i).is_some_and(|k| k == key) || seen.contains(key)
            })
        {
            continue;
        }
        let mut keys = Vec::new();
        let mut de = serde_json::Deserializer::from_str(text);
        let visitor = NewKeys {
            seen: &seen,
            out: &mut keys,
        };
        if serde::Deserializer::deserialize_map(&mut de, visitor).is_err() || de.end().is_err() {
            continue;
        }
        last.clear();
        if scanned {
            last.extend(spans.iter().map(|&(s, e)| text[s..e].to_string()));
        }
        keys.sort();
        for k in keys {
            if seen.insert(k.clone()) {
                names.push((k, line_no));
            }
        }
    }
    Ok(names)
}

/// Collects the keys of one JSON object that are not in `seen`, without building the object:
/// keys are compared where they lie in the line, values skipped.
struct NewKeys<'a> {
    seen: &'a BTreeSet<String>,
    out: &'a mut Vec<String>,
}

impl<'de> serde::de::Visitor<'de> for NewKeys<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key<'de>>()? {
            map.next_value::<IgnoredAny>()?;
            if !self.seen.contains(key.0.as_ref()) && !self.out.iter().any(|k| *k == key.0) {
                self.out.push(key.0.into_owned());
            }
        }
        Ok(())
    }
}

/// A JSON key, borrowed from the line unless it has escapes.
struct Key<'a>(std::borrow::Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A CSV header's column names, trimmed, without a byte-order mark.
pub fn header_names(record: &csv::StringRecord) -> Vec<String> {
    record
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let f = if i == 0 {
                f.trim_start_matches('\u{feff}')
            } else {
                f
            };
            f.trim().to_string()
        })
        .collect()
}

/// The error for columns a file has and the schema does not, under `schema_evolution = "fail"`.
pub fn undeclared_error(job: &IngestJob, path: &Path, line: u64, columns: &[&str]) -> Error {
    let names = columns
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Error::Input {
        path: path.to_path_buf(),
        message: format!(
            "line {line}: column {names} is not in the schema of {} (declared at {}:{}). Declare it in `schema`, or set schema_evolution = \"add_columns\" to add it to the table as a string column, or \"ignore\" to leave it out",
            job.table,
            job.origin.file.display(),
            job.origin.line
        ),
    }
}

/// The error for a source column named like a lineage column (`_source_file`, ...).
pub fn reserved_error(path: &Path, line: u64, name: &str) -> Error {
    Error::Input {
        path: path.to_path_buf(),
        message: format!(
            "line {line}: column `{name}` has the name of a lineage column every bronze table gets; rename it in the source"
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::json_columns;

    #[test]
    fn json_keys_are_found_once_with_their_first_line_and_broken_lines_add_none() {
        let file = [
            r#"{"a": 1, "b": 2}"#,
            r#"{"a": 3, "b": 4}"#,
            r#"{"b": 5, "a": 6}"#,
            r#"{"a": 7, "b": 8, "c": "x"}"#,
            r#"{"a": 9, "d": tru"#,
            r#"{"a\"x": 10}"#,
            r#"{"e": {"f": 11}, "a": 12}"#,
            r#"not json, "g": 1}"#,
            r#"{"h": 1} {"#,
            r#"{"c": 13}"#,
            r#"{"i": 14}"#,
        ]
        .join("\n");
        let found = json_columns(Path::new("t.jsonl"), file.as_bytes(), 0).unwrap();
        let want = [
            ("a", 1),
            ("b", 1),
            ("c", 4),
            ("a\"x", 6),
            ("e", 7),
            ("i", 11),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(k, l)| (k.to_string(), *l)).collect();
        assert_eq!(found, want);
        // Read from a line on, lines keep their numbers in the whole file.
        let tail = file.split('\n').skip(9).collect::<Vec<_>>().join("\n");
        let found = json_columns(Path::new("t.jsonl"), tail.as_bytes(), 9).unwrap();
        assert_eq!(found, [("c".to_string(), 10), ("i".to_string(), 11)]);
    }
}
