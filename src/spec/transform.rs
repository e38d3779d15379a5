//! Transform jobs as a spec declares them: one SQL `SELECT` writing a silver or gold table,
//! how it is partitioned and refreshed, and the `drop` expectations applied as it is written.

use std::path::PathBuf;

use super::expect::Expectation;
use super::partition::{Grain, PartitionField};
use super::table::{Origin, TableName};

/// How a run refreshes a transform's table when its inputs changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransformMode {
    /// Recompute the whole table (the default).
    FullRefresh,
    /// Recompute only the partitions (of the table's time partition field) whose input rows
    /// changed since the table's last run, and replace exactly those.
    ReplacePartitions,
}

/// An input whose rows for an output time range are the rows with `column` in that range
/// (`incremental_by` in the spec): what lets a partition range be pushed into the input's scan.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeInput {
    pub table: TableName,
    pub column: String,
    /// Spec line of the entry, for messages.
    pub line: usize,
}

/// A transform job: one SQL SELECT -> a silver or gold table.
#[derive(Debug, Clone)]
pub struct TransformJob {
    pub table: TableName,
    pub sql_file: PathBuf,
    pub sql: String,
    pub partition_by: Vec<PartitionField>,
    pub mode: TransformMode,
    /// Inputs that may be read by time range (see [`RangeInput`]); any other input is read whole.
    pub incremental_by: Vec<RangeInput>,
    /// `batch_rows`: input rows per batch when a full recompute or a backfill runs in batches
    /// (`plan::batches`); `Some(0)`: always one query, whatever `PIPELINE_BATCH_ROWS` says
    /// (for a query whose partitions are not computed from their own rows alone). `None`: the
    /// default (`PIPELINE_BATCH_ROWS`, else sized by the memory pool). Only with
    /// `incremental_by`.
    pub batch_rows: Option<u64>,
    pub target_file_size: usize,
    pub origin: Origin,
    /// The `[[expect]]`s with `action = "drop"` on this table: applied as it is written.
    pub drops: Vec<Expectation>,
    /// `erase = { customer_id = "buyer_id" }`: in `pipeline erase` conditions, the subject
    /// column (key) is this table's column (value).
    pub erase: std::collections::BTreeMap<String, String>,
    /// `description` and `[transform.columns]`: the table's comment and its fields' docs.
    pub docs: super::TableDocs,
}

impl TransformJob {
    /// The partition field of a year/month/day/hour transform, if the table has one.
    pub fn time_partition(&self) -> Option<&PartitionField> {
        self.partition_by
            .iter()
            .find(|p| Grain::of(p.transform).is_some())
    }

    /// The column an input is ranged by, if it is declared in `incremental_by`.
    pub fn range_column(&self, input: &TableName) -> Option<&str> {
        self.incremental_by
            .iter()
            .find(|r| &r.table == input)
            .map(|r| r.column.as_str())
    }
}

/// The columns a transform's quarantine table (`<table>__quarantine`, rows its `drop`
/// expectations removed) adds after the table's own: the expectation the row violated and the
/// run that dropped it.
pub const DROP_QUARANTINE_COLUMNS: [&str; 2] = ["_expectation", "_dropped_in_run"];
