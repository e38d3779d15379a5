//! An **append** (ingest): the new files ADDED; every live manifest of the current snapshot is
//! carried over untouched, without being read, so the commit cost grows with what changed, not
//! with the table or its history; small carried manifests are merged (Iceberg's merge-append).
//! Operation `append`.

use iceberg::spec::{ManifestEntry, ManifestFile, Operation, PartitionSpec};

use super::operation::{ExistingManifest, SnapshotProduceOperation};
use crate::commit::merge::Merge;
use crate::error::Result;
use crate::spec::TableName;

/// The producer's part for [`WriteMode::Append`](crate::commit::WriteMode::Append).
pub(super) struct Append;

impl SnapshotProduceOperation for Append {
    fn operation(&self, _added_files: u64) -> Operation {
        Operation::Append
    }

    fn existing_manifest(
        &self,
        _spec: &PartitionSpec,
        _manifest: &ManifestFile,
    ) -> ExistingManifest {
        ExistingManifest::CarryUntouched
    }

    /// An append deletes nothing (and reads no manifest to ask).
    fn delete_entry(
        &self,
        _table: &TableName,
        _spec: &PartitionSpec,
        _entry: &ManifestEntry,
    ) -> Result<bool> {
        Ok(false)
    }

    fn merge(&self) -> Option<Merge> {
        Some(Merge::Small)
    }
}
