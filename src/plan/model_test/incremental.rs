//! A model test of an incremental run: the partitions the given rows of a transform's
//! `incremental_by` inputs fall in are the ones the run recomputes (as a run derives them
//! from the files added to those inputs); those inputs are read for those partitions only (as
//! a run's range scans read them), and the result replaces the existing rows of those
//! partitions.

use std::collections::HashSet;

use arrow::array::{Array, BooleanArray, RecordBatch};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};

use crate::spec::{Grain, ModelTest, TableName, TransformJob, TransformMode};

/// The partitions an incremental test recomputes: the grain of the table's time partition,
/// its source column, and the partition units (e.g. months since 1970) of the given rows.
pub struct Recomputed {
    pub grain: Grain,
    pub column: String,
    pub units: HashSet<i32>,
}

impl Recomputed {
    /// What `test` (with `existing` rows) recomputes of `job`, from its given input `batches`.
    pub fn of(
        job: &TransformJob,
        test: &ModelTest,
        batches: &[(TableName, RecordBatch)],
    ) -> Result<Recomputed, String> {
        let partition = job
            .time_partition()
            .filter(|_| job.mode == TransformMode::ReplacePartitions);
        let Some((partition, grain)) = partition.and_then(|p| Some((p, Grain::of(p.transform)?)))
        else {
            return Err(format!(
                "`existing` tests an incremental run: {} is not a replace_partitions transform partitioned by year, month, day or hour",
                job.table
            ));
        };
        let mut units = HashSet::new();
        let mut ranged = false;
        for (input, batch) in batches {
            let Some(column) = job.range_column(input) else {
                continue;
            };
            if test.given.iter().any(|(t, _)| t == input) {
                ranged = true;
                units.extend(units_of(batch, column, grain)?.into_iter().flatten());
            }
        }
        if !ranged {
            return Err(format!(
                "`existing` needs rows given for an incremental_by input of {} (its new rows decide the partitions to recompute)",
                job.table
            ));
        }
        Ok(Recomputed {
            grain,
            column: partition.source.clone(),
            units,
        })
    }

    /// `batch` with only the rows whose `column` falls in (`inside`) or outside the
    /// recomputed partitions.
    pub fn keep(
        &self,
        batch: &RecordBatch,
        column: &str,
        inside: bool,
    ) -> Result<RecordBatch, String> {
        let units = units_of(batch, column, self.grain)?;
        let mask: BooleanArray = units
            .iter()
            .map(|u| Some(u.is_some_and(|u| self.units.contains(&u)) == inside))
            .collect();
        filter_record_batch(batch, &mask).map_err(|e| e.to_string())
    }
}

/// The partition unit of `column` in each row of `batch` (`None` for NULL).
fn units_of(batch: &RecordBatch, column: &str, grain: Grain) -> Result<Vec<Option<i32>>, String> {
    let array = batch
        .column_by_name(column)
        .ok_or_else(|| format!("no column `{column}`"))?;
    let micros = cast(array, &DataType::Timestamp(TimeUnit::Microsecond, None))
        .map_err(|e| format!("`{column}` is not a date or timestamp: {e}"))?;
    let micros = micros
        .as_any()
        .downcast_ref::<arrow::array::PrimitiveArray<TimestampMicrosecondType>>()
        .ok_or_else(|| format!("`{column}` is not a date or timestamp"))?;
    Ok((0..micros.len())
        .map(|i| (!micros.is_null(i)).then(|| grain.unit_of(micros.value(i))))
        .collect())
}
