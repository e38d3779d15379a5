//! The pipeline spec: `pipelines/NAME.toml` plus the SQL files it names, loaded into a validated
//! model. Loading rejects unknown keys, wrong types, unknown column types, bad partition
//! expressions and missing SQL files with `file:line:col` and a hint; it never touches data.

mod catalog;
mod column_type;
mod expect;
mod load;
mod partition;
mod reader;

use std::fmt;
use std::path::PathBuf;

pub use catalog::{
    read_env, CatalogConfig, RestConfig, S3Storage, S3TablesConfig, StaticCredentials,
};
pub use column_type::{ColumnType, TYPE_NAMES};
pub use expect::{parse_duration_micros, parse_fraction, Check, ExpectAction, Expectation};
pub use load::{display_path_in, list_pipelines, load_pipeline, load_pipeline_file};
pub use partition::{is_identifier, PartitionField};
pub use reader::{Reader, ReaderUses};

/// A table name `namespace.table`, the unit of every job's output.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName {
    pub namespace: String,
    pub name: String,
}

impl TableName {
    /// Parses `ns.table`; both parts must be plain identifiers.
    pub fn parse(text: &str) -> Option<TableName> {
        let (ns, name) = text.split_once('.')?;
        (is_identifier(ns) && is_identifier(name)).then(|| TableName {
            namespace: ns.to_string(),
            name: name.to_string(),
        })
    }

    /// The quarantine table that receives this table's bad records.
    pub fn quarantine(&self) -> TableName {
        TableName {
            namespace: self.namespace.clone(),
            name: format!("{}__quarantine", self.name),
        }
    }

    /// The Iceberg identifier of this table.
    pub fn ident(&self) -> iceberg::TableIdent {
        iceberg::TableIdent::new(
            iceberg::NamespaceIdent::new(self.namespace.clone()),
            self.name.clone(),
        )
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.namespace, self.name)
    }
}

/// Where a job is declared: the spec file and the line of its `table =` key.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: usize,
}

/// A validated pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub name: String,
    pub description: Option<String>,
    /// The spec file this was loaded from.
    pub file: PathBuf,
    /// The project directory; relative paths in the spec resolve against it.
    pub project_dir: PathBuf,
    /// The catalog in use: `[catalog]`, or the `[catalogs.NAME]` chosen with `--catalog`.
    pub catalog: CatalogConfig,
    /// `[catalogs.NAME]` sections.
    pub catalogs: std::collections::BTreeMap<String, CatalogConfig>,
    /// `[[expect]]`: quality checks on the tables this pipeline writes.
    pub expectations: Vec<Expectation>,
    /// `[[reader]]`: consumers outside the pipeline, for `pipeline plan`.
    pub readers: Vec<Reader>,
    pub ingests: Vec<IngestJob>,
    pub transforms: Vec<TransformJob>,
    /// `[retention] max_snapshots`: each table the pipeline writes keeps about this many
    /// snapshots of history (older ones are expired at commit); `None` keeps all.
    pub max_snapshots: Option<usize>,
}

impl Pipeline {
    /// Switches to the catalog `[catalogs.NAME]` (the `--catalog NAME` option).
    pub fn use_catalog(&mut self, name: &str) -> crate::error::Result<()> {
        match self.catalogs.get(name) {
            Some(c) => {
                self.catalog = c.clone();
                Ok(())
            }
            None => Err(crate::error::Error::Pipeline {
                file: self.file.clone(),
                message: format!("no catalog named `{name}`"),
                hint: Some(if self.catalogs.is_empty() {
                    "the spec has no [catalogs.NAME] sections; add one to choose it with --catalog"
                        .into()
                } else {
                    format!(
                        "the spec defines: {}",
                        self.catalogs.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }),
            }),
        }
    }
}

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
}

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
    pub target_file_size: usize,
    pub origin: Origin,
    /// The `[[expect]]`s with `action = "drop"` on this table: applied as it is written.
    pub drops: Vec<Expectation>,
}

impl TransformJob {
    /// The partition field of a year/month/day/hour transform, if the table has one.
    pub fn time_partition(&self) -> Option<&PartitionField> {
        self.partition_by
            .iter()
            .find(|p| crate::commit::Grain::of(p.transform).is_some())
    }

    /// The column an input is ranged by, if it is declared in `incremental_by`.
    pub fn range_column(&self, input: &TableName) -> Option<&str> {
        self.incremental_by
            .iter()
            .find(|r| &r.table == input)
            .map(|r| r.column.as_str())
    }
}

/// Default target size of a data file: 128 MiB.
pub const DEFAULT_TARGET_FILE_SIZE: usize = 128 * 1024 * 1024;

/// Lineage columns every bronze row carries, after the declared ones.
pub const LINEAGE_COLUMNS: [&str; 4] = ["_source_file", "_source_line", "_ingested_at", "_run_id"];
