//! The pipeline spec: `pipelines/NAME.toml` plus the SQL files it names, loaded into a validated
//! model. Loading rejects unknown keys, wrong types, unknown column types, bad partition
//! expressions and missing SQL files with `file:line:col` and a hint; it never touches data.
//!
//! This is the bottom layer of the engine: it imports nothing of the engine but
//! [`crate::error`] and [`crate::secrets`] (see `docs/architecture.md`).

mod catalog;
mod column;
mod column_type;
mod docs;
mod engine;
mod expect;
mod ingest;
mod load;
mod maintenance;
mod model_test;
mod partition;
mod pipeline;
mod reader;
mod schedule;
mod sql;
mod table;
mod transform;

pub use catalog::{
    read_env, CatalogConfig, RestConfig, S3Storage, S3TablesConfig, SigV4Signing, StaticCredentials,
};
pub use column::ColumnRef;
pub use column_type::{ColumnType, TYPE_NAMES};
pub use docs::{ColumnDoc, TableDocs, COMMENT_PROPERTY};
pub use engine::{scheduler_url, BallistaEngine, Engine};
pub use expect::{
    parse_duration_micros, parse_fraction, violation_predicate, Check, ExpectAction, Expectation,
};
pub use ingest::{
    BadRecordPolicy, ColumnSpec, CsvOptions, Format, IngestJob, SchemaEvolution, LINEAGE_COLUMNS,
    QUARANTINE_COLUMNS,
};
pub use load::{
    display_path_in, list_pipelines, load_model_tests, load_pipeline, load_pipeline_file,
    load_with_catalog, pipeline_names, producer_of,
};
pub use maintenance::Maintenance;
pub use model_test::{ModelTest, TestRows};
pub use partition::{Grain, PartitionField};
pub use pipeline::{Pipeline, DEFAULT_TARGET_FILE_SIZE};
pub use reader::{Reader, ReaderUses};
pub use schedule::{Catchup, Schedule};
pub use sql::{is_identifier, quote_ident};
pub use table::{Origin, TableName};
pub use transform::{RangeInput, TransformJob, TransformMode, DROP_QUARANTINE_COLUMNS};
