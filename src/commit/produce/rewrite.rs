//! A **rewrite** (copy-on-write row removal, e.g. the old rows of a reloaded source file): the
//! new files ADDED, the live files named by path DELETED, the other files of their manifests
//! kept EXISTING as the snapshot that added them wrote them. Operation `overwrite`.

use std::collections::BTreeSet;

use iceberg::spec::{ManifestEntry, ManifestFile, Operation, PartitionSpec};

use super::operation::{ExistingManifest, SnapshotProduceOperation};
use crate::error::Result;
use crate::spec::TableName;

/// The producer's part for [`WriteMode::Rewrite`](crate::commit::WriteMode::Rewrite): the
/// paths of the data files it deletes.
pub(super) struct Rewrite<'a>(pub &'a BTreeSet<String>);

impl SnapshotProduceOperation for Rewrite<'_> {
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

    /// Only the named files go.
    fn delete_entry(
        &self,
        _table: &TableName,
        _spec: &PartitionSpec,
        entry: &ManifestEntry,
    ) -> Result<bool> {
        Ok(self.0.contains(entry.file_path()))
    }
}
