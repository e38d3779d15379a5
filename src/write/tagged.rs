//! Rows tagged by `drop` expectations (the last column names the expectation a row violates,
//! NULL for a row kept), split into the table's rows and its quarantine table's.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow::compute::{filter_record_batch, is_null, not};
use arrow::datatypes::{DataType, Field, Schema};

use crate::error::{Error, Result};
use crate::spec::DROP_QUARANTINE_COLUMNS;

/// One tagged batch split into the rows kept (without the tag) and the rows dropped (as
/// quarantine rows: the columns, the expectation name, the run id), with counts per
/// expectation added to `counts`.
pub fn split_tagged(
    batch: &RecordBatch,
    run_id: &str,
    counts: &mut BTreeMap<String, u64>,
) -> Result<(RecordBatch, Option<RecordBatch>)> {
    let n = batch.num_columns();
    let tag = batch.column(n - 1);
    let kept_mask = is_null(tag)?;
    let kept = filter_record_batch(&batch.project(&(0..n - 1).collect::<Vec<_>>())?, &kept_mask)?;
    if kept.num_rows() == batch.num_rows() {
        return Ok((kept, None));
    }
    let dropped = filter_record_batch(batch, &not(&kept_mask)?)?;
    let names = arrow::compute::cast(dropped.column(n - 1), &DataType::Utf8)?;
    let names = names
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| Error::Internal("the drop tag is not text".into()))?;
    for name in names.iter().flatten() {
        *counts.entry(name.to_string()).or_default() += 1;
    }
    let mut fields: Vec<Arc<Field>> = dropped.schema().fields().iter().cloned().collect();
    fields[n - 1] = Arc::new(Field::new(DROP_QUARANTINE_COLUMNS[0], DataType::Utf8, true));
    fields.push(Arc::new(Field::new(
        DROP_QUARANTINE_COLUMNS[1],
        DataType::Utf8,
        true,
    )));
    let mut columns: Vec<ArrayRef> = dropped.columns().to_vec();
    columns[n - 1] = Arc::new(names.clone());
    columns.push(Arc::new(StringArray::from(vec![
        run_id;
        dropped.num_rows()
    ])));
    let quarantined = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
    Ok((kept, Some(quarantined)))
}
