//! Snapshot production and the commit protocol of a run.
//!
//! iceberg 0.10 only fast-appends, so the snapshots are ours (see `produce.rs`): an **append**
//! (ingest: new files ADDED, live manifests carried over untouched), an **overwrite** (a
//! transform's full refresh: every live file DELETED in rewritten manifests, sequence numbers
//! kept) or a **replace** of a [`PartitionRange`] (incremental runs and backfills: only files of
//! the selected partitions DELETED, manifests without any carried over unread).
//!
//! ```text
//!              lock (one run per pipeline; OS file lock, released however the holder exits)
//!                │
//!   scope ───────┤ per transform: up to date (skip) | partition range | full, from the input
//!                │ snapshots its table's last snapshot recorded (run/scope.rs)
//!                │
//!   target ──────┤ table as the run found it (schema/spec evolved if the job changed them)
//!                │ write data files, manifests, manifest list        [crash: orphan files only]
//!                ▼
//!   staged ──────┤ snapshot added to in-memory metadata, NOT on `main` (an unreferenced
//!                │ snapshot); downstream jobs of the run read it      [crash: orphan files only]
//!                │ every job done: write each table's next metadata file
//!                ▼
//!   publishing ──┤ ONE SQLite transaction: per table, compare-and-set of the metadata
//!                │ location the run started from (or INSERT for a new table), plus the run
//!                │ record (pipeline_runs)                 [crash: nothing moved]
//!                │
//!                ├── conflict (another writer moved a table): nothing moved; each such table
//!                │   is rebased (append; replace of untouched partitions) and publishing is
//!                │   tried again (5 attempts, backoff), or the run fails naming the table and
//!                │   partitions (overlapping replace, overwrite)          (run/rebase.rs)
//!                ▼
//!   published ───┘ every table's `main` at its new snapshot, the record says from where
//!                  (undo: `pipeline rollback RUN`, the same transaction in reverse)
//! ```
//!
//! Exactly-once ingest rides on the same commit: each append snapshot's summary lists the
//! source files it loaded (`pipeline.loaded-files`), so rows and ledger become visible together.
//! Incremental transforms ride on it too: each transform snapshot records the input snapshots
//! it read (`pipeline.inputs`), so the next run knows exactly what changed since.
//!
//! Crash points are tested by killing the process (SIGKILL) at `bronze-files-written`,
//! `staged` and `publishing` (see [`crate::fault`]): no table shows any part of the dead run,
//! and `pipeline orphans` finds the files it left.

mod diff;
mod expire;
mod produce;
mod range;
mod target;
mod widen;

pub use diff::{changed_files, file_times, FileTimes};
pub use expire::expire_snapshots;
pub use produce::{stage_snapshot, WriteMode};
pub use range::{Grain, PartitionRange};
pub use target::{
    prepare_target, prepare_target_from, schema_of, DesiredColumn, Evolution, TableTarget,
};
pub use widen::{type_change, TypeChange, WIDENINGS};

use std::sync::Arc;

use iceberg::io::FileIO;
use iceberg::spec::{SnapshotReference, SnapshotRetention, TableMetadata, MAIN_BRANCH};
use iceberg::table::Table;

use crate::catalog::TableChange;
use crate::error::Result;
use crate::spec::TableName;

/// Reads a snapshot's manifest list.
pub async fn manifest_list(
    file_io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &iceberg::spec::Snapshot,
) -> Result<iceberg::spec::ManifestList> {
    let bytes = file_io.new_input(snapshot.manifest_list())?.read().await?;
    Ok(iceberg::spec::ManifestList::parse_with_version(
        &bytes,
        metadata.format_version(),
    )?)
}

/// A table version written and committed to metadata but not yet visible on `main`.
#[derive(Clone)]
pub struct StagedTable {
    pub table: TableName,
    /// Metadata location the run started from; `None` when the run creates the table.
    pub base_location: Option<String>,
    /// Metadata with the new snapshot added (main still at the old one).
    pub metadata: TableMetadata,
    pub snapshot_id: i64,
    pub added_rows: u64,
    pub added_files: u64,
    pub added_bytes: u64,
    /// Rows of the files the snapshot deleted (overwrite and replace).
    pub deleted_rows: u64,
    /// How the snapshot was produced, with the files it added and its extra summary properties:
    /// enough to produce it again on a newer parent (see [`StagedTable::restage`]).
    pub mode: WriteMode,
    pub files: Vec<iceberg::spec::DataFile>,
    pub properties: std::collections::HashMap<String, String>,
}

impl StagedTable {
    /// A read-only table whose `main` is the staged snapshot, for downstream jobs of the run.
    pub fn reader(&self, file_io: &FileIO) -> Result<Table> {
        let metadata = self.published_metadata()?;
        Ok(Table::builder()
            .metadata(Arc::new(metadata))
            .identifier(self.table.ident())
            .file_io(file_io.clone())
            .runtime(iceberg::Runtime::try_current()?)
            .readonly(true)
            .build()?)
    }

    /// The metadata to publish: the staged snapshot becomes `main`.
    pub fn published_metadata(&self) -> Result<TableMetadata> {
        Ok(self
            .metadata
            .clone()
            .into_builder(None)
            .set_ref(
                MAIN_BRANCH,
                SnapshotReference::new(
                    self.snapshot_id,
                    SnapshotRetention::branch(None, None, None),
                ),
            )?
            .build()?
            .metadata)
    }

    /// The catalog change that publishes this table.
    pub fn into_change(self) -> Result<TableChange> {
        Ok(TableChange {
            metadata: Some(self.published_metadata()?),
            table: self.table,
            expected_location: self.base_location,
        })
    }
}
