//! An **overwrite** (a transform's full refresh): the new files ADDED; every live manifest of
//! the current snapshot is rewritten with all its files DELETED, their sequence numbers kept.
//! Operation `overwrite`.

use iceberg::spec::{ManifestEntry, ManifestFile, Operation, PartitionSpec};

use super::operation::{ExistingManifest, SnapshotProduceOperation};
use crate::error::Result;
use crate::spec::TableName;

/// The producer's part for [`WriteMode::Overwrite`](crate::commit::WriteMode::Overwrite).
pub(super) struct Overwrite;

impl SnapshotProduceOperation for Overwrite {
    fn operation(&self, _added_files: u64) -> Operation {
        Operation::Overwrite
    }

    fn existing_manifest(
        &self,
        _spec: &PartitionSpec,
        _manifest: &ManifestFile,
    ) -> ExistingManifest {
        ExistingManifest::Filter
    }

    /// Every live file goes.
    fn delete_entry(
        &self,
        _table: &TableName,
        _spec: &PartitionSpec,
        _entry: &ManifestEntry,
    ) -> Result<bool> {
        Ok(true)
    }
}
