//! A **manifest rewrite** (maintenance): no data file changes; every live manifest of the
//! current snapshot is carried over and the data manifests of the current partition spec are
//! merged into one. Operation `replace`, with the parent's lineage keys carried over.

use std::collections::HashMap;

use iceberg::spec::{ManifestEntry, ManifestFile, Operation, PartitionSpec, SnapshotRef};

use super::operation::{carry_parent_lineage, ExistingManifest, SnapshotProduceOperation};
use crate::commit::merge::Merge;
use crate::error::Result;
use crate::spec::TableName;

/// The producer's part for
/// [`WriteMode::RewriteManifests`](crate::commit::WriteMode::RewriteManifests).
pub(super) struct RewriteManifests;

impl SnapshotProduceOperation for RewriteManifests {
    fn operation(&self, _added_files: u64) -> Operation {
        Operation::Replace
    }

    fn existing_manifest(
        &self,
        _spec: &PartitionSpec,
        _manifest: &ManifestFile,
    ) -> ExistingManifest {
        ExistingManifest::CarryUntouched
    }

    /// A manifest rewrite deletes nothing (the merge keeps every live file).
    fn delete_entry(
        &self,
        _table: &TableName,
        _spec: &PartitionSpec,
        _entry: &ManifestEntry,
    ) -> Result<bool> {
        Ok(false)
    }

    fn merge(&self) -> Option<Merge> {
        Some(Merge::All)
    }

    fn summary_properties(
        &self,
        parent: Option<&SnapshotRef>,
        properties: &mut HashMap<String, String>,
    ) {
        carry_parent_lineage(parent, properties);
    }
}
