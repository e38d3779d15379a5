//! Rendering Arrow results for people (aligned tables) and machines (JSON with every value as
//! its display string, so decimals keep their scale and nothing is lost to floats).

use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use serde_json::Value;

use crate::error::Result;

/// Column names and rows of string values (`None` for NULL).
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

/// Converts batches to display strings.
pub fn batches_to_rows(schema: &arrow::datatypes::Schema, batches: &[RecordBatch]) -> Result<Rows> {
    let columns = schema.fields().iter().map(|f| f.name().clone()).collect();
    let options = FormatOptions::default();
    let mut rows = Vec::new();
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()?;
        for r in 0..batch.num_rows() {
            rows.push(
                batch
                    .columns()
                    .iter()
                    .zip(&formatters)
                    .map(|(c, f)| (!c.is_null(r)).then(|| f.value(r).to_string()))
                    .collect(),
            );
        }
    }
    Ok(Rows { columns, rows })
}

impl Rows {
    /// `{"columns": [...], "rows": [[...], ...]}` with string values and nulls.
    pub fn to_json(&self) -> Value {
        serde_json::json!({ "columns": self.columns, "rows": self.rows })
    }

    /// An aligned text table.
    pub fn to_table(&self) -> String {
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| v.clone().unwrap_or_else(|| "NULL".into()))
                    .collect()
            })
            .collect();
        render_table(&self.columns, &cells)
    }
}

/// An aligned text table with a header rule.
pub fn render_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let w = cell.chars().count();
            if i < widths.len() && w > widths[i] {
                widths[i] = w;
            }
        }
    }
    let line = |cells: &[String]| -> String {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = line(header);
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    out.push('\n');
    for row in rows {
        out.push_str(&line(
            &row.iter()
                .map(|c| c.replace('\n', "\\n"))
                .collect::<Vec<_>>(),
        ));
        out.push('\n');
    }
    out
}
