//! Snapshot production and the commit protocol of a run: what every job's output becomes
//! (a staged snapshot), and how a run's staged snapshots are published ([`publish`]).
//!
//! iceberg 0.10 only fast-appends, so the snapshots are ours (`produce/`: one producer per
//! write mode): an **append** (ingest: new files ADDED, live manifests carried over untouched),
//! an **overwrite** (a transform's full refresh: every live file DELETED in rewritten
//! manifests, sequence numbers kept) or a **replace** of a [`PartitionRange`] (incremental runs
//! and backfills: only files of the selected partitions DELETED, manifests without any carried
//! over unread).
//!
//! ```text
//!              lock (one run per pipeline; OS file lock, released however the holder exits)
//!                │
//!   scope ───────┤ per transform: up to date (skip) | partition range | full, from the input
//!                │ snapshots its table's last snapshot recorded (plan/scope.rs)
//!                │
//!   target ──────┤ table as the run found it (schema/spec evolved if the job changed them)
//!                │ write data files, manifests, manifest list        [crash: orphan files only]
//!                ▼
//!   staged ──────┤ snapshot added to in-memory metadata, NOT on `main` (an unreferenced
//!                │ snapshot); downstream jobs of the run read it      [crash: orphan files only]
//!                │ every job done: write each table's next metadata file
//!                ▼
//!   publishing ──┤ embedded: ONE SQLite transaction: per table, compare-and-set of the
//!                │ metadata location the run started from (or INSERT for a new table), plus
//!                │ the run record (pipeline_runs)         [crash: nothing moved]
//!                │ remote: see publish/ (one REST transaction, or a journal)
//!                │
//!                ├── conflict (another writer moved a table): nothing moved; each such table
//!                │   is rebased (append; replace of untouched partitions) and publishing is
//!                │   tried again (5 attempts, backoff), or the run fails naming the table and
//!                │   partitions (overlapping replace, overwrite)  (publish/rebase.rs)
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
//! `staged` and `publishing` (see `crate::fault`): no table shows any part of the dead run,
//! and `pipeline orphans` finds the files it left.

pub mod deletion;
mod diff;
mod expire;
#[cfg(test)]
pub(crate) mod fixture;
mod job;
mod label;
pub mod ledger;
mod live;
mod manifests;
mod merge;
mod produce;
pub mod publish;
mod range;
mod replaced;
mod staged;
pub mod summary;
mod target;
mod widen;

pub use deletion::{
    named_by_a_run, replace_landing_file, Deleter, Deletion, Kept, Survey, Unlisted,
};
pub use diff::{changed_files, file_times, FileTimes};
pub use expire::{
    expirable, expire_metadata, expire_snapshots, expire_with, trim_metadata_log, window_backlog,
    Expired, Expiry, METADATA_LOG_KEPT,
};
pub use job::{JobContext, JobKind};
pub use label::partition_label;
pub use live::{referenced, LiveFiles, LiveTable, UnreadableTable};
pub use manifests::{load_manifests, manifest_list, manifest_lists};
pub use produce::stage_snapshot;
pub use range::PartitionRange;
pub use replaced::{data_changes, only_replaced_since};
pub use staged::{StagedTable, WriteMode};
pub use target::{
    has_words, prepare_target, prepare_target_from, schema_of, widen_unpublished, DesiredColumn,
    Evolution, TableTarget,
};
pub use widen::{type_change, TypeChange, WIDENINGS};
