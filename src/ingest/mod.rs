//! Ingest jobs: CSV / JSON Lines source files -> a bronze table (and its quarantine table).
//!
//! A blocking reader thread decodes records strictly against the declared schema and sends
//! record batches through a bounded channel to the async writer, so memory stays bounded
//! whatever the file sizes. Every record is either loaded or quarantined (or fails the run):
//! `good + quarantined = records` per file.

mod batch;
mod columns;
mod csv_source;
mod discover;
mod evolve;
mod json_keys;
mod json_source;
mod lanes;
mod load;
mod part;
mod pending;
mod raw_fields;
mod reload;
mod sink;
mod source_rewrite;
mod values;

pub use columns::{bronze_columns, output_tables, quarantine_columns};
pub use discover::{discover_files, no_files_error};
pub use evolve::with_added_columns;
pub use load::{run_ingest, IngestOutcome};
pub use pending::{pending_files, PendingFiles};
pub use raw_fields::RawFields;
pub use sink::FileStats;
pub use source_rewrite::rewrite_without;
