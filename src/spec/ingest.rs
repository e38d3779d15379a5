//! Ingest jobs as a spec declares them: source files, their format and schema, and what
//! happens to records that do not fit; and the columns the loader adds to every table it
//! writes.

use super::column_type::ColumnType;
use super::partition::PartitionField;
use super::table::{Origin, TableName};

/// Source file format of an ingest job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    /// Newline-delimited JSON: one object per line.
    Json,
}

/// What happens to a record that does not parse against the declared schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadRecordPolicy {
    /// Stop the run with `file:line: reason`; nothing is published.
    Fail,
    /// Send the record to `<table>__quarantine` with its file, line, raw text and reason.
    Quarantine,
}

/// What an ingest does with a column that source files have and its schema does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaEvolution {
    /// Stop the run naming the file, line and column (the default: nothing is dropped
    /// silently).
    Fail,
    /// Add the column to the bronze table (an Iceberg add-column, new field id, type string;
    /// rows loaded before read NULL) and load it.
    AddColumns,
    /// Do not load it; the run logs a warning naming the columns.
    Ignore,
}

impl SchemaEvolution {
    pub fn name(self) -> &'static str {
        match self {
            SchemaEvolution::Fail => "fail",
            SchemaEvolution::AddColumns => "add_columns",
            SchemaEvolution::Ignore => "ignore",
        }
    }
}

/// One column of an ingest job.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSpec {
    pub name: String,
    pub ty: ColumnType,
    /// `not null` in the spec: a NULL makes the record bad.
    pub required: bool,
    /// Added by `schema_evolution = "add_columns"` (not declared): files without it read
    /// NULL, and as a string it takes any JSON value (non-strings as their JSON text).
    pub added: bool,
}

/// CSV reading options.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvOptions {
    pub delimiter: u8,
    pub quote: u8,
    /// The first line names the columns (matched to the schema by name).
    pub header: bool,
}

/// An ingest job: source files -> a bronze table.
#[derive(Debug, Clone)]
pub struct IngestJob {
    pub table: TableName,
    pub format: Format,
    /// Glob patterns, relative to the project directory unless absolute.
    pub paths: Vec<String>,
    pub columns: Vec<ColumnSpec>,
    pub partition_by: Vec<PartitionField>,
    pub on_bad_record: BadRecordPolicy,
    /// Columns in source files that the schema does not declare.
    pub schema_evolution: SchemaEvolution,
    pub csv: CsvOptions,
    /// Field values read as NULL (after no trimming). Default: the empty string.
    pub null_values: Vec<String>,
    pub target_file_size: usize,
    pub origin: Origin,
    /// `erase = { customer_id = "cust_no" }`: in `pipeline erase` conditions, the subject
    /// column (key) is this table's column (value).
    pub erase: std::collections::BTreeMap<String, String>,
    /// `description` and `[ingest.columns]`: the table's comment and its fields' docs.
    pub docs: super::TableDocs,
}

/// Lineage columns every bronze row carries, after the declared ones.
pub const LINEAGE_COLUMNS: [&str; 4] = ["_source_file", "_source_line", "_ingested_at", "_run_id"];

/// The columns of an ingest job's quarantine table (`<table>__quarantine`), in order: the
/// source file and line of the bad record, its raw text, why it was refused, the column at
/// fault (when one is), and the loader's `_ingested_at` and `_run_id`.
pub const QUARANTINE_COLUMNS: [&str; 7] = [
    "source_file",
    "line",
    "raw",
    "reason",
    "column",
    "_ingested_at",
    "_run_id",
];
