//! What one write mode decides when a snapshot is produced (iceberg-rust's
//! `SnapshotProduceOperation`): the operation its summary records, which new files it accepts,
//! what becomes of each live manifest of the current snapshot (carried over untouched, or read
//! and filtered) and of each live file of a read manifest (DELETED or kept EXISTING), whether
//! the carried manifests are merged, and the summary properties of its own. Everything else a
//! snapshot needs is shared (`mod.rs`, `current.rs`).

use std::collections::HashMap;

use iceberg::spec::{DataFile, ManifestEntry, ManifestFile, Operation, PartitionSpec, SnapshotRef};

use crate::commit::merge::Merge;
use crate::commit::summary;
use crate::error::Result;
use crate::spec::TableName;

/// What becomes of a live manifest of the current snapshot in the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ExistingManifest {
    /// Listed again as it is, without being read.
    CarryUntouched,
    /// Read; each live file goes through [`SnapshotProduceOperation::delete_entry`]. A manifest
    /// of which nothing is deleted is still listed as it is.
    Filter,
}

/// One write mode's part in producing a snapshot.
pub(super) trait SnapshotProduceOperation: Send + Sync {
    /// The operation the snapshot summary records, given how many files the snapshot adds.
    fn operation(&self, added_files: u64) -> Operation;

    /// Refuses new files the mode may not add; by default every file is accepted.
    fn validate_added_files(
        &self,
        _table: &TableName,
        _spec: &PartitionSpec,
        _files: &[DataFile],
    ) -> Result<()> {
        Ok(())
    }

    /// What becomes of `manifest` (of partition spec `spec`), a live manifest of the current
    /// snapshot.
    fn existing_manifest(&self, spec: &PartitionSpec, manifest: &ManifestFile) -> ExistingManifest;

    /// Whether the live `entry` of a manifest being filtered (of partition spec `spec`) is
    /// DELETED by the snapshot; `false` keeps it as EXISTING.
    fn delete_entry(
        &self,
        table: &TableName,
        spec: &PartitionSpec,
        entry: &ManifestEntry,
    ) -> Result<bool>;

    /// Which of the carried data manifests are merged into one; by default none.
    fn merge(&self) -> Option<Merge> {
        None
    }

    /// Adds the mode's own summary properties to `properties` (which already hold the job's
    /// and the summary collector's); `parent` is the current snapshot. By default none.
    fn summary_properties(
        &self,
        _parent: Option<&SnapshotRef>,
        _properties: &mut HashMap<String, String>,
    ) {
    }
}

/// Carries the lineage keys ([`summary::CARRIED_BY_REPLACE`]) of `parent` into `properties`
/// where they are not set: a snapshot that leaves the table's rows as they are (Iceberg's
/// `replace`) still says what produced them.
pub(super) fn carry_parent_lineage(
    parent: Option<&SnapshotRef>,
    properties: &mut HashMap<String, String>,
) {
    if let Some(parent) = parent {
        for key in summary::CARRIED_BY_REPLACE {
            if let Some(value) = parent.summary().additional_properties.get(*key) {
                properties
                    .entry(key.to_string())
                    .or_insert_with(|| value.clone());
            }
        }
    }
}
