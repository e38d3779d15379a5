//! What maintenance plans for each table and reports back: shared by planning
//! (`maintain.rs`), publishing (`maintain_publish.rs`) and a run's report (`report.rs`).

use serde::Serialize;

use crate::commit::Expiry;
use crate::maintain::compact::CompactionPlan;
use crate::spec::TableName;

/// What maintenance did (or, planned only, would do) to one table.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TableMaintenance {
    pub table: String,
    /// Partitions compacted (planned), with their files.
    pub compaction: CompactionPlan,
    /// Files replaced and written, and rows carried, when the compaction ran.
    pub files_in: u64,
    pub files_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Partitions left as they were because another writer changed their files meanwhile.
    pub skipped_partitions: Vec<String>,
    /// Data manifests of the current snapshot, and whether they are (to be) rewritten as one.
    pub manifests: u64,
    pub rewrite_manifests: bool,
    /// Snapshots expired (planned: expirable now).
    pub expired_snapshots: u64,
    /// Files deleted after the expiry was published, data files among them, their bytes.
    pub deleted_files: u64,
    pub deleted_data_files: u64,
    pub deleted_bytes: u64,
    /// Files that could not be deleted (`pipeline orphans` lists them later).
    pub undeleted_files: u64,
    /// Files in the table's folder that nothing references (left by a killed run or
    /// maintenance; older than an hour, or any age for a purge), deleted, and their bytes.
    pub unreferenced_deleted: u64,
    pub unreferenced_bytes: u64,
    /// Files that were not deleted, and why (the deletion path refused or the storage failed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<crate::commit::Kept>,
    /// `main` before and after.
    #[serde(with = "crate::id_text::option", default)]
    pub snapshot_before: Option<i64>,
    #[serde(with = "crate::id_text::option", default)]
    pub snapshot_after: Option<i64>,
    /// Why nothing was done, when nothing was.
    pub note: Option<String>,
}

impl TableMaintenance {
    /// Whether the table needs (or got) any change.
    pub fn changes(&self) -> bool {
        !self.compaction.groups.is_empty() || self.rewrite_manifests || self.expired_snapshots > 0
    }
}

/// What `pipeline maintain` did.
#[derive(Debug, Clone, Serialize)]
pub struct MaintainReport {
    pub pipeline: String,
    /// The record of the operation; `None` when planned only or nothing needed doing.
    pub run_id: Option<String>,
    pub planned_only: bool,
    pub seconds: f64,
    pub tables: Vec<TableMaintenance>,
    /// The command that undoes the compactions and manifest rewrites (expiry cannot be undone).
    pub undo: Option<String>,
}

/// One table to maintain, as planned.
pub(super) struct Planned {
    pub name: TableName,
    pub table: iceberg::table::Table,
    pub target: usize,
    pub expiry: Expiry,
    pub report: TableMaintenance,
}
