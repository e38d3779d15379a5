//! A staged table: a new snapshot written (data files, manifests, manifest list) and added to
//! the table's metadata in memory, but not on `main` and not published. Downstream jobs of
//! the run read it; the publish moves `main` to it.

use std::collections::BTreeSet;
use std::sync::Arc;

use iceberg::io::FileIO;
use iceberg::spec::{SnapshotReference, SnapshotRetention, TableMetadata, MAIN_BRANCH};
use iceberg::table::Table;

use super::range::PartitionRange;
use super::summary;
use crate::error::Result;
use crate::records::TableRecord;
use crate::spec::TableName;

/// How a staged snapshot relates to the table's current content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteMode {
    /// The new files replace everything.
    Overwrite,
    /// The new files are added to what is there.
    Append,
    /// The new files replace the partitions of the range; all other files stay as they are.
    Replace(PartitionRange),
    /// The listed data files (by path) are deleted, the new files added (copy-on-write row
    /// removal, e.g. the old rows of a reloaded source file).
    Rewrite(BTreeSet<String>),
    /// Compaction: the listed data files are replaced by the new files holding exactly their
    /// rows (Iceberg operation `replace`: the table's data does not change).
    Compact(BTreeSet<String>),
    /// The live data manifests are rewritten into one per partition spec; no data file changes
    /// (operation `replace`).
    RewriteManifests,
}

impl WriteMode {
    /// The word the run record and messages use.
    pub fn name(&self) -> &'static str {
        match self {
            WriteMode::Overwrite => "overwrite",
            WriteMode::Append => "append",
            WriteMode::Replace(_) => "replace_partitions",
            WriteMode::Rewrite(_) => "rewrite",
            WriteMode::Compact(_) => "compact",
            WriteMode::RewriteManifests => "rewrite_manifests",
        }
    }

    /// Whether the snapshot leaves the table's rows as they are (compaction, manifest rewrite):
    /// Iceberg's `replace` operation.
    pub fn keeps_data(&self) -> bool {
        matches!(self, WriteMode::Compact(_) | WriteMode::RewriteManifests)
    }
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

    /// The table's rows in the staged snapshot.
    pub fn total_rows(&self) -> u64 {
        summary::total_records(self.metadata.snapshot_by_id(self.snapshot_id))
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

    /// What the run record says of this table once published: the operation, the partitions
    /// replaced, `main` before and after, and the rows after.
    pub fn table_record(&self) -> TableRecord {
        TableRecord {
            table: self.table.to_string(),
            operation: self.mode.name().into(),
            partitions: match &self.mode {
                WriteMode::Replace(r) => Some(r.to_string()),
                _ => None,
            },
            snapshot_before: self.metadata.current_snapshot_id(),
            snapshot_after: Some(self.snapshot_id),
            rows: self.total_rows(),
            expired: None,
            dropped_metadata: None,
        }
    }
}
