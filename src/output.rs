//! Rendering Arrow results for people (aligned tables, control characters escaped) and
//! machines (JSON whose values keep their types: numbers, booleans and null; decimals are JSON
//! numbers written exactly, digit for digit, never through a float).

use std::borrow::Cow;
use std::fmt::Write;

use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

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
        let nulls: Vec<_> = batch.columns().iter().map(|c| c.logical_nulls()).collect();
        for r in 0..batch.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .zip(&nulls)
                    .map(|(f, n)| (!is_null(n, r)).then(|| f.value(r).to_string()))
                    .collect(),
            );
        }
    }
    Ok(Rows { columns, rows })
}

/// `{"columns": [...], "rows": [[...], ...]}`: integers, floats and decimals as JSON numbers
/// (decimals exactly as their text), booleans as `true`/`false`, NULL as `null`, every other
/// value (text, dates, timestamps, lists) as the string `pipeline query` shows. A float that is
/// not a number (`NaN`, `inf`) is a string.
pub fn batches_to_json(
    schema: &arrow::datatypes::Schema,
    batches: &[RecordBatch],
) -> Result<String> {
    let columns: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
    let mut out = format!(
        "{{\"columns\":{},\"rows\":[",
        serde_json::to_string(&columns).unwrap_or_default()
    );
    let options = FormatOptions::default();
    let mut first_row = true;
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()?;
        let nulls: Vec<_> = batch.columns().iter().map(|c| c.logical_nulls()).collect();
        for r in 0..batch.num_rows() {
            out.push_str(if first_row { "[" } else { ",[" });
            first_row = false;
            for (i, (c, f)) in batch.columns().iter().zip(&formatters).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if is_null(&nulls[i], r) {
                    out.push_str("null");
                    continue;
                }
                let text = f.value(r).to_string();
                let bare = *c.data_type() == DataType::Boolean
                    || (is_number_type(c.data_type()) && is_json_number(&text));
                if bare {
                    out.push_str(&text);
                } else {
                    let _ = write!(out, "{}", serde_json::Value::String(text));
                }
            }
            out.push(']');
        }
    }
    out.push_str("]}");
    Ok(out)
}

/// Row `r` is NULL, by the column's logical nulls (a NULL literal's column has no null buffer).
fn is_null(nulls: &Option<arrow::buffer::NullBuffer>, r: usize) -> bool {
    nulls.as_ref().is_some_and(|n| n.is_null(r))
}

fn is_number_type(t: &DataType) -> bool {
    t.is_integer() || t.is_floating() || t.is_decimal()
}

/// `text` is a JSON number as it stands (not `NaN`, `inf`).
fn is_json_number(text: &str) -> bool {
    serde_json::from_str::<serde_json::Number>(text).is_ok()
}

/// `text` safe to print on a terminal: line breaks, tabs and other control characters (an
/// escape sequence, a NUL, bytes of a binary file) become visible escapes (`\n`, `\u{1b}`).
pub fn escape_control(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// A message safe to print on a terminal, its lines kept: every control character but the line
/// break becomes a visible escape (see [`escape_control`]).
pub fn escape_message(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let escaped = |c: char| c.is_control() && !(keep_lines && c == '\n');
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' if keep_lines => out.push('\n'),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

impl Rows {
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

/// An aligned text table with a header rule; control characters in cells are escaped.
pub fn render_table(header: &[String], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<Cow<str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| escape_control(c)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            let w = cell.chars().count();
            if i < widths.len() && w > widths[i] {
                widths[i] = w;
            }
        }
    }
    let line = |cells: &[Cow<str>]| -> String {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let header: Vec<Cow<str>> = header.iter().map(|h| escape_control(h)).collect();
    let mut out = line(&header);
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int64Array, StringArray,
    };
    use arrow::datatypes::{Field, Schema};

    use super::*;

    #[test]
    fn json_values_keep_their_types_and_decimals_their_digits() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("price", DataType::Decimal128(10, 2), true),
            Field::new("ok", DataType::Boolean, true),
            Field::new("ratio", DataType::Float64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(45378), None])),
            Arc::new(
                Decimal128Array::from(vec![Some(900), Some(-1999)])
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
            Arc::new(BooleanArray::from(vec![Some(true), Some(false)])),
            Arc::new(Float64Array::from(vec![Some(0.5), Some(f64::NAN)])),
            Arc::new(StringArray::from(vec![Some("a \"b\""), Some("12")])),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        assert_eq!(
            batches_to_json(&schema, &[batch]).unwrap(),
            r#"{"columns":["n","price","ok","ratio","name"],"rows":[[45378,9.00,true,0.5,"a \"b\""],[null,-19.99,false,"NaN","12"]]}"#
        );
    }

    #[test]
    fn control_characters_are_escaped_for_terminals() {
        assert_eq!(escape_control("plain é"), "plain é");
        assert_eq!(
            escape_control("a\nb\t\u{1b}[31m\0"),
            "a\\nb\\t\\u{1b}[31m\\u{0}"
        );
        assert_eq!(escape_message("a\n  hint: \u{1b}b"), "a\n  hint: \\u{1b}b");
        let table = render_table(&["x".into()], &[vec!["\u{7}\r".into()]]);
        assert_eq!(table, "x\n-------\n\\u{7}\\r\n");
    }
}
