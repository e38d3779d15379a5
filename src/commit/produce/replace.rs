//! A **replace** of the partitions of a [`PartitionRange`] (incremental runs and backfills):
//! the new files, all inside the range, ADDED; the live files in the range DELETED, the other
//! live files of the same manifests kept EXISTING; manifests whose partition summary proves
//! they hold no selected file are carried over without being read. Operation `overwrite`, or
//! `delete` when no file is added; the summary says which partitions were replaced.

use std::collections::HashMap;

use iceberg::spec::{DataFile, ManifestEntry, ManifestFile, Operation, PartitionSpec, SnapshotRef};

use super::operation::{ExistingManifest, SnapshotProduceOperation};
use crate::commit::{summary, PartitionRange};
use crate::error::{Error, Result};
use crate::spec::TableName;

/// The producer's part for [`WriteMode::Replace`](crate::commit::WriteMode::Replace): the
/// partitions it replaces.
pub(super) struct Replace<'a>(pub &'a PartitionRange);

impl SnapshotProduceOperation for Replace<'_> {
    fn operation(&self, added_files: u64) -> Operation {
        if added_files == 0 {
            Operation::Delete
        } else {
            Operation::Overwrite
        }
    }

    /// Every new file must lie in the range.
    fn validate_added_files(
        &self,
        table: &TableName,
        spec: &PartitionSpec,
        files: &[DataFile],
    ) -> Result<()> {
        let range = self.0;
        if let Some(f) = files
            .iter()
            .find(|f| !range.contains(spec, f.partition()).unwrap_or(false))
        {
            return Err(Error::Internal(format!(
                "{table}: file {} is outside the partitions being replaced ({range})",
                f.file_path()
            )));
        }
        Ok(())
    }

    /// Filtered unless its partition summary proves it holds no file of the range.
    fn existing_manifest(&self, spec: &PartitionSpec, manifest: &ManifestFile) -> ExistingManifest {
        if self.0.may_touch(spec, manifest.partitions.as_deref()) {
            ExistingManifest::Filter
        } else {
            ExistingManifest::CarryUntouched
        }
    }

    /// The files in the range go; a spec without the range's field is refused.
    fn delete_entry(
        &self,
        table: &TableName,
        spec: &PartitionSpec,
        entry: &ManifestEntry,
    ) -> Result<bool> {
        self.0
            .contains(spec, entry.data_file().partition())
            .map_err(|m| {
                Error::table_msg(
                    table,
                    format!(
                        "{m}: the table has files of an older partition spec; \
                         run the job as a full refresh first"
                    ),
                )
            })
    }

    fn summary_properties(
        &self,
        _parent: Option<&SnapshotRef>,
        properties: &mut HashMap<String, String>,
    ) {
        // What Spark writes for a dynamic partition overwrite, plus the range itself.
        properties.insert(summary::REPLACE_PARTITIONS.into(), "true".into());
        properties.insert(summary::PARTITIONS.into(), self.0.to_string());
    }
}
