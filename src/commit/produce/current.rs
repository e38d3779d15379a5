//! The current snapshot's live manifests in the next snapshot: each is carried over as it is,
//! or read and rewritten with the files the write mode deletes as DELETED entries and its other
//! live files as EXISTING ones, snapshot ids and sequence numbers kept. A manifest holding only
//! DELETED entries is history, not content: it is dropped. A read manifest of which nothing is
//! deleted is carried over as it is. A current snapshot that cannot be read is reported with
//! the way back ([`unreadable_snapshot`]).

use iceberg::io::FileIO;
use iceberg::spec::{
    Manifest, ManifestContentType, ManifestEntry, ManifestEntryRef, ManifestFile,
    ManifestWriterBuilder, PartitionSpecRef, SnapshotRef, SnapshotSummaryCollector, TableMetadata,
};

use super::counts::FileCounts;
use super::operation::{ExistingManifest, SnapshotProduceOperation};
use crate::commit::{manifest_list, summary};
use crate::error::{Error, Result};
use crate::spec::TableName;

/// What carrying the current snapshot's manifests over needs: the table, where and as which
/// snapshot to write rewritten manifests, and the summary collector that counts the files
/// deleted. `deleted` sums them up.
pub(super) struct CurrentManifests<'a, P: FnMut() -> String> {
    pub table: &'a TableName,
    pub metadata: &'a TableMetadata,
    pub file_io: &'a FileIO,
    pub snapshot_id: i64,
    pub collector: &'a mut SnapshotSummaryCollector,
    /// The path of the next manifest written.
    pub next_manifest_path: P,
    pub deleted: FileCounts,
}

/// A read manifest's live entries, split by the write mode.
struct Split<'m> {
    removed: Vec<&'m ManifestEntryRef>,
    kept: Vec<&'m ManifestEntryRef>,
}

impl<P: FnMut() -> String> CurrentManifests<'_, P> {
    /// The current snapshot's manifests as the new snapshot lists them (in the order of the
    /// current manifest list), and the counts of the files `operation` deleted. None without a
    /// current snapshot.
    pub async fn carry(
        mut self,
        operation: &dyn SnapshotProduceOperation,
    ) -> Result<(Vec<ManifestFile>, FileCounts)> {
        let mut manifests = Vec::new();
        let metadata = self.metadata;
        let Some(current) = metadata.current_snapshot() else {
            return Ok((manifests, self.deleted));
        };
        let list = manifest_list(self.file_io, metadata, current)
            .await
            .map_err(|e| unreadable_snapshot(self.table, current, e))?;
        for manifest_file in list.entries() {
            if !manifest_file.has_added_files() && !manifest_file.has_existing_files() {
                continue; // only DELETED entries: history, not content
            }
            manifests.push(self.carry_one(operation, current, manifest_file).await?);
        }
        Ok((manifests, self.deleted))
    }

    /// `manifest_file` as the new snapshot lists it: as it is when `operation` leaves it
    /// untouched or deletes none of its files, else rewritten.
    async fn carry_one(
        &mut self,
        operation: &dyn SnapshotProduceOperation,
        current: &SnapshotRef,
        manifest_file: &ManifestFile,
    ) -> Result<ManifestFile> {
        let manifest_spec = self
            .metadata
            .partition_spec_by_id(manifest_file.partition_spec_id)
            .cloned()
            .unwrap_or_else(|| self.metadata.default_partition_spec().clone());
        if operation.existing_manifest(&manifest_spec, manifest_file)
            == ExistingManifest::CarryUntouched
        {
            return Ok(manifest_file.clone());
        }
        let manifest = manifest_file
            .load_manifest(self.file_io)
            .await
            .map_err(|e| unreadable_snapshot(self.table, current, e.into()))?;
        let split = split_entries(self.table, operation, &manifest_spec, &manifest)?;
        if split.removed.is_empty() {
            return Ok(manifest_file.clone());
        }
        self.rewrite(manifest_file, &manifest_spec, split).await
    }

    /// Writes `manifest_file` again as this snapshot's: the `removed` files DELETED (counted in
    /// the summary and in `deleted`), the `kept` ones EXISTING, each with the snapshot that
    /// added it and its sequence numbers.
    async fn rewrite(
        &mut self,
        manifest_file: &ManifestFile,
        manifest_spec: &PartitionSpecRef,
        split: Split<'_>,
    ) -> Result<ManifestFile> {
        let schema = self.metadata.current_schema().clone();
        let collector = &mut *self.collector;
        let output = self.file_io.new_output((self.next_manifest_path)())?;
        let builder = ManifestWriterBuilder::new(
            output,
            Some(self.snapshot_id),
            schema.clone(),
            manifest_spec.as_ref().clone(),
        );
        let mut writer = match manifest_file.content {
            ManifestContentType::Data => builder.build_v2_data(),
            ManifestContentType::Deletes => builder.build_v2_deletes(),
        };
        for entry in split.removed {
            let file = entry.data_file().clone();
            collector.remove_file(&file, schema.clone(), manifest_spec.clone());
            self.deleted.add(&file);
            let seq = sequence_of(self.table, entry)?;
            writer.add_delete_file(file, seq, entry.file_sequence_number)?;
        }
        for entry in split.kept {
            let seq = sequence_of(self.table, entry)?;
            let added_by = entry
                .snapshot_id()
                .unwrap_or(manifest_file.added_snapshot_id);
            writer.add_existing_file(
                entry.data_file().clone(),
                added_by,
                seq,
                entry.file_sequence_number,
            )?;
        }
        Ok(writer.write_manifest_file().await?)
    }
}

/// The live entries of `manifest` (of partition spec `spec`), split into those `operation`
/// deletes and those it keeps, in manifest order; the first refusal stops the split.
fn split_entries<'m>(
    table: &TableName,
    operation: &dyn SnapshotProduceOperation,
    spec: &PartitionSpecRef,
    manifest: &'m Manifest,
) -> Result<Split<'m>> {
    let mut split = Split {
        removed: Vec::new(),
        kept: Vec::new(),
    };
    for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
        if operation.delete_entry(table, spec, entry)? {
            split.removed.push(entry);
        } else {
            split.kept.push(entry);
        }
    }
    Ok(split)
}

/// The data sequence number of a carried entry; an entry without one is refused.
fn sequence_of(table: &TableName, entry: &ManifestEntry) -> Result<i64> {
    entry.sequence_number().ok_or_else(|| {
        Error::table_msg(
            table,
            format!(
                "manifest entry for {} has no sequence number",
                entry.data_file().file_path()
            ),
        )
    })
}

/// The error for a table whose current snapshot cannot be read (its manifest list or a
/// manifest is missing or damaged), with the way back: roll back the run that wrote it.
fn unreadable_snapshot(table: &TableName, snapshot: &SnapshotRef, cause: Error) -> Error {
    let id = snapshot.snapshot_id();
    let how = match snapshot
        .summary()
        .additional_properties
        .get(summary::RUN_ID)
    {
        Some(run) => format!(
            "go back to its last readable snapshot with `pipeline rollback {run}` (the run that wrote it), then run again"
        ),
        None => format!(
            "go back to its last readable snapshot (`pipeline history {table}` lists them), then run again"
        ),
    };
    Error::Damaged(format!(
        "table {table}: its current snapshot {id} cannot be read ({cause}); {how}"
    ))
}
