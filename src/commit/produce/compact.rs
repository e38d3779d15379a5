//! A **compaction**: the new files, holding exactly the rows of the live files named by path,
//! ADDED; the named files DELETED, the other files of their manifests kept EXISTING. The table's
//! data does not change: operation `replace`, with the parent's lineage keys carried over.

use std::collections::{BTreeSet, HashMap};

use iceberg::spec::{ManifestEntry, ManifestFile, Operation, PartitionSpec, SnapshotRef};

use super::operation::{carry_parent_lineage, ExistingManifest, SnapshotProduceOperation};
use crate::error::Result;
use crate::spec::TableName;

/// The producer's part for [`WriteMode::Compact`](crate::commit::WriteMode::Compact): the
/// paths of the data files it replaces.
pub(super) struct Compact<'a>(pub &'a BTreeSet<String>);

impl SnapshotProduceOperation for Compact<'_> {
    fn operation(&self, _added_files: u64) -> Operation {
        Operation::Replace
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

    fn summary_properties(
        &self,
        parent: Option<&SnapshotRef>,
        properties: &mut HashMap<String, String>,
    ) {
        carry_parent_lineage(parent, properties);
    }
}
