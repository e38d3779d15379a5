//! Test rows (text) <-> Arrow: input tables built by casting each value's text to its column's
//! type, and results (and expected rows) rendered back to text the same way, so that equal
//! values compare equal whatever way a test file writes them (`2026-01-03 09:12:00` or
//! `2026-01-03T09:12:00`, `20` or `20.00`).

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, StringArray};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::spec::TestRows;

/// A row as text, `None` for NULL.
pub type TextRow = Vec<Option<String>>;

/// `rows` as one batch of `schema` (a column no row names is NULL; `None` rows: empty). A
/// column a row names that `schema` lacks, or a value that does not read as its column's
/// type, is an error saying which.
pub fn batch_of(schema: &SchemaRef, rows: Option<&TestRows>) -> Result<RecordBatch, String> {
    let columns = rows.map(TestRows::columns).unwrap_or_default();
    if let Some(unknown) = columns.iter().find(|c| schema.field_with_name(c).is_err()) {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        return Err(format!(
            "no column `{unknown}`; the columns are {}",
            names.join(", ")
        ));
    }
    let rows = rows.map(|r| r.rows.as_slice()).unwrap_or_default();
    let mut columns = Vec::new();
    for field in schema.fields() {
        let texts: Vec<Option<&str>> = rows
            .iter()
            .map(|r| r.get(field.name()).and_then(|v| v.as_deref()))
            .collect();
        columns.push(
            typed(&texts, field.data_type())
                .map_err(|e| format!("column `{}`: {e}", field.name()))?,
        );
    }
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())
}

/// `texts` cast to `ty`; the first value that does not read as `ty` is the error.
pub fn typed(texts: &[Option<&str>], ty: &DataType) -> Result<ArrayRef, String> {
    if texts.iter().all(Option::is_none) {
        return Ok(new_null_array(ty, texts.len()));
    }
    let strings = StringArray::from(texts.to_vec());
    let strict = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    cast_with_options(&strings, ty, &strict).map_err(|_| {
        let bad = texts
            .iter()
            .flatten()
            .find(|t| cast_with_options(&StringArray::from(vec![**t]), ty, &strict).is_err())
            .copied()
            .unwrap_or_default();
        format!("`{bad}` is not a {ty} value")
    })
}

/// The rows of `batches` as text, columns `columns` only (each batch may type them its own
/// way: the rows a test keeps of a table and those its SQL returns).
pub fn text_rows(batches: &[RecordBatch], columns: &[String]) -> Result<Vec<TextRow>, String> {
    let options = FormatOptions::default();
    let mut out = Vec::new();
    for batch in batches {
        let arrays = columns
            .iter()
            .map(|c| {
                batch
                    .column_by_name(c)
                    .ok_or_else(|| format!("expects column `{c}`, which the SQL does not return"))
            })
            .collect::<Result<Vec<&ArrayRef>, String>>()?;
        let formatters = arrays
            .iter()
            .map(|a| ArrayFormatter::try_new(a.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        for row in 0..batch.num_rows() {
            out.push(
                arrays
                    .iter()
                    .zip(&formatters)
                    .map(|(a, f)| (!a.is_null(row)).then(|| f.value(row).to_string()))
                    .collect(),
            );
        }
    }
    Ok(out)
}

/// The expected rows of `columns` (names) as text, each value read as its column's type in
/// `schema` and rendered as results are.
pub fn expected_rows(
    expect: &TestRows,
    columns: &[String],
    schema: &SchemaRef,
) -> Result<Vec<TextRow>, String> {
    let mut arrays = Vec::new();
    for name in columns {
        let field = schema
            .field_with_name(name)
            .map_err(|_| format!("expects column `{name}`, which the SQL does not return"))?;
        let texts: Vec<Option<&str>> = expect
            .rows
            .iter()
            .map(|r| r.get(name).and_then(|v| v.as_deref()))
            .collect();
        arrays
            .push(typed(&texts, field.data_type()).map_err(|e| format!("expected `{name}`: {e}"))?);
    }
    let fields: Vec<_> = columns
        .iter()
        .filter_map(|c| schema.field_with_name(c).ok().cloned())
        .collect();
    let batch = RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), arrays)
        .map_err(|e| e.to_string())?;
    text_rows(&[batch], columns)
}

/// The rows of `left` not matched one for one in `right` (a multiset difference), sorted.
pub fn missing_from(left: &[TextRow], right: &[TextRow]) -> Vec<TextRow> {
    let mut pool: Vec<&TextRow> = right.iter().collect();
    let mut out = Vec::new();
    for row in left {
        match pool.iter().position(|r| *r == row) {
            Some(i) => {
                pool.swap_remove(i);
            }
            None => out.push(row.clone()),
        }
    }
    out.sort();
    out
}
