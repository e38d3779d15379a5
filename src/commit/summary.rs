//! Snapshot summaries: the keys the engine writes into every snapshot it commits, and one
//! reader for their numbers.
//!
//! Iceberg's own counts (`total-records`, `added-data-files`, ...) are written by the producer
//! (`produce.rs`) from what each snapshot really adds and deletes. The engine's own keys say
//! which run made a snapshot and what a later run needs to know about it:
//!
//! | key | written by | read by |
//! |---|---|---|
//! | `pipeline.name`, `pipeline.run-id`, `pipeline.job` | every job ([`super::job`]) | `pipeline history` |
//! | `pipeline.loaded-files` ([`LOADED_FILES`]) | ingest | the file ledger ([`super::ledger`]) |
//! | `pipeline.inputs`, `pipeline.transform` | transforms | the next run's scope (`plan::scope`) |
//! | `pipeline.lineage` (`lineage::LINEAGE_KEY`) | transforms | renames, `pipeline plan` |
//! | `pipeline.partitions`, `replace-partitions` | a replace of partitions | people, Spark |
//! | `pipeline.control` | the control table of remote catalogs | people |

use iceberg::spec::{SnapshotRef, Summary};

/// Rows in the table at this snapshot.
pub const TOTAL_RECORDS: &str = "total-records";
/// Live data files at this snapshot.
pub const TOTAL_DATA_FILES: &str = "total-data-files";
/// Bytes of the live data files at this snapshot.
pub const TOTAL_FILES_SIZE: &str = "total-files-size";
/// Rows the snapshot added.
pub const ADDED_RECORDS: &str = "added-records";
/// Rows the snapshot deleted.
pub const DELETED_RECORDS: &str = "deleted-records";
/// Data files the snapshot added.
pub const ADDED_DATA_FILES: &str = "added-data-files";
/// Data files the snapshot deleted.
pub const DELETED_DATA_FILES: &str = "deleted-data-files";
/// Delete files and deleted rows at this snapshot (always 0: the engine writes copy-on-write).
pub const TOTAL_DELETE_FILES: &str = "total-delete-files";
pub const TOTAL_POSITION_DELETES: &str = "total-position-deletes";
pub const TOTAL_EQUALITY_DELETES: &str = "total-equality-deletes";
/// What Spark writes for a dynamic partition overwrite (`true`).
pub const REPLACE_PARTITIONS: &str = "replace-partitions";

/// The pipeline that committed the snapshot.
pub const PIPELINE: &str = "pipeline.name";
/// The run that committed the snapshot.
pub const RUN_ID: &str = "pipeline.run-id";
/// The kind of job that committed the snapshot: `ingest` or `transform`.
pub const JOB: &str = "pipeline.job";
/// The source files an ingest snapshot loaded (JSON, see [`super::ledger`]).
pub const LOADED_FILES: &str = "pipeline.loaded-files";
/// JSON map of input table -> snapshot id a transform snapshot was computed from.
pub const INPUTS: &str = "pipeline.inputs";
/// Fingerprint of the SQL, partitioning and drop expectations that produced a transform
/// snapshot.
pub const TRANSFORM: &str = "pipeline.transform";
/// The partitions a replace snapshot replaced, e.g. `month(order_date) in 2026-02`.
pub const PARTITIONS: &str = "pipeline.partitions";
/// What a control-table snapshot did: `publish-intent`, `run-record` or `publish-cleared`.
pub const CONTROL: &str = "pipeline.control";

/// Keys that describe the rows of a table, not the commit: a `replace` snapshot (compaction,
/// manifest rewrite) carries them over from its parent, so the next run still knows which
/// input snapshots the table was computed from, with which SQL and lineage.
pub const CARRIED_BY_REPLACE: &[&str] = &[INPUTS, TRANSFORM, crate::lineage::LINEAGE_KEY];

/// The number under `key` in `summary` (0 when absent or not a number).
pub fn number(summary: &Summary, key: &str) -> u64 {
    summary
        .additional_properties
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The number under `key` in a snapshot's summary, e.g. [`TOTAL_DATA_FILES`] (0 for no
/// snapshot).
pub fn total(snapshot: Option<&SnapshotRef>, key: &str) -> u64 {
    snapshot.map_or(0, |s| number(s.summary(), key))
}

/// The rows of the table at a snapshot (0 for no snapshot).
pub fn total_records(snapshot: Option<&SnapshotRef>) -> u64 {
    total(snapshot, TOTAL_RECORDS)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use iceberg::spec::Operation;

    use super::*;

    #[test]
    fn numbers_are_read_and_absent_or_bad_ones_are_zero() {
        let summary = Summary {
            operation: Operation::Append,
            additional_properties: HashMap::from([
                (TOTAL_RECORDS.to_string(), "42".to_string()),
                (TOTAL_DATA_FILES.to_string(), "many".to_string()),
            ]),
        };
        assert_eq!(number(&summary, TOTAL_RECORDS), 42);
        assert_eq!(number(&summary, TOTAL_DATA_FILES), 0);
        assert_eq!(number(&summary, TOTAL_FILES_SIZE), 0);
        assert_eq!(total_records(None), 0);
    }
}
