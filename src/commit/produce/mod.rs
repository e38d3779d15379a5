//! The snapshots a job produces, all with honest summaries (added/deleted files and records,
//! totals) and sequence numbers preserved on every carried-over entry:
//!
//! - **append**: new files ADDED; every live manifest of the current snapshot is carried over
//!   untouched (commit cost grows with what changed, not with the table or its history);
//! - **overwrite**: new files ADDED; every live file DELETED in rewritten manifests;
//! - **replace** (partitions of a [`PartitionRange`](crate::commit::PartitionRange)): new files ADDED; live files in the range
//!   DELETED, the other live files of the same manifests EXISTING; manifests whose partition
//!   summary proves they hold no selected file are carried over without being read. With no new
//!   files this is a **delete** of those partitions.
//!
//! One producer per write mode, split the way iceberg-rust splits its `SnapshotProducer` and
//! `SnapshotProduceOperation`: this file holds what every snapshot shares (the format version
//! check, the snapshot id and sequence number, the manifest of the ADDED files, the manifest
//! list, the summary and the `Snapshot` itself); `current.rs` carries over or rewrites the
//! current snapshot's live manifests; each mode's file (`append.rs`, `overwrite.rs`,
//! `replace.rs`, `rewrite.rs`, `compact.rs`, `rewrite_manifests.rs`) implements the
//! `SnapshotProduceOperation` of `operation.rs`: what the mode does with those manifests and
//! which operation it records.

mod append;
mod compact;
mod counts;
mod current;
mod operation;
mod overwrite;
mod replace;
mod rewrite;
mod rewrite_manifests;

use std::collections::HashMap;

use iceberg::io::FileIO;
use iceberg::spec::{
    DataFile, FormatVersion, ManifestFile, ManifestListWriter, ManifestWriterBuilder, Snapshot,
    SnapshotSummaryCollector, Summary, TableMetadata,
};
use uuid::Uuid;

use super::merge::merge_manifests;
use super::staged::{StagedTable, WriteMode};
use super::target::TableTarget;
use crate::error::{Error, Result};
use crate::spec::TableName;
use counts::FileCounts;
use current::CurrentManifests;
use operation::SnapshotProduceOperation;

/// Stages a snapshot of `mode` adding `files` to `target`; `main` is not moved.
pub async fn stage_snapshot(
    target: TableTarget,
    files: Vec<DataFile>,
    file_io: &FileIO,
    properties: HashMap<String, String>,
    mode: WriteMode,
) -> Result<StagedTable> {
    let TableTarget {
        table,
        base_location,
        metadata,
        ..
    } = target;
    check_format_version(&table, &metadata)?;
    let staged_files = files.clone();
    let produced = {
        let operation = operation_of(&mode);
        operation.validate_added_files(&table, metadata.default_partition_spec(), &files)?;
        SnapshotProducer::new(&table, &metadata, file_io)
            .produce(operation.as_ref(), files, &properties)
            .await?
    };
    let Produced {
        snapshot,
        added,
        deleted,
    } = produced;
    let snapshot_id = snapshot.snapshot_id();
    let metadata = metadata
        .into_builder(None)
        .add_snapshot(snapshot)?
        .build()?
        .metadata;
    Ok(StagedTable {
        table,
        base_location,
        metadata,
        snapshot_id,
        added_rows: added.rows,
        added_files: added.files,
        added_bytes: added.bytes,
        deleted_rows: deleted.rows,
        mode,
        files: staged_files,
        properties,
    })
}

/// The producer's part for `mode`.
fn operation_of(mode: &WriteMode) -> Box<dyn SnapshotProduceOperation + '_> {
    match mode {
        WriteMode::Append => Box::new(append::Append),
        WriteMode::Overwrite => Box::new(overwrite::Overwrite),
        WriteMode::Replace(range) => Box::new(replace::Replace(range)),
        WriteMode::Rewrite(paths) => Box::new(rewrite::Rewrite(paths)),
        WriteMode::Compact(paths) => Box::new(compact::Compact(paths)),
        WriteMode::RewriteManifests => Box::new(rewrite_manifests::RewriteManifests),
    }
}

/// Refuses a table of any format version but 2, the only one the engine writes.
fn check_format_version(table: &TableName, metadata: &TableMetadata) -> Result<()> {
    if metadata.format_version() != FormatVersion::V2 {
        return Err(Error::table_msg(
            table,
            format!(
                "format version {} is not supported for writes yet (v2 is)",
                metadata.format_version()
            ),
        ));
    }
    Ok(())
}

/// A produced snapshot, not yet in the table's metadata, with the counts of the files it added
/// and deleted.
struct Produced {
    snapshot: Snapshot,
    added: FileCounts,
    deleted: FileCounts,
}

/// The paths of the files one commit writes under the table's `metadata/` folder.
struct CommitPaths {
    metadata_folder: String,
    commit_id: Uuid,
    manifests_written: u32,
}

impl CommitPaths {
    /// The path of the next manifest: `{commit_id}-m{n}.avro`, numbered from 1.
    fn next_manifest(&mut self) -> String {
        self.manifests_written += 1;
        format!(
            "{}/{}-m{}.avro",
            self.metadata_folder, self.commit_id, self.manifests_written
        )
    }

    /// The path of the manifest list of snapshot `snapshot_id`.
    fn manifest_list(&self, snapshot_id: i64) -> String {
        format!(
            "{}/snap-{snapshot_id}-1-{}.avro",
            self.metadata_folder, self.commit_id
        )
    }
}

/// The steps every snapshot shares, on the table as the run found it: a fresh snapshot id, the
/// next sequence number, the current snapshot as parent.
struct SnapshotProducer<'a> {
    table: &'a TableName,
    metadata: &'a TableMetadata,
    file_io: &'a FileIO,
    snapshot_id: i64,
    sequence_number: i64,
    paths: CommitPaths,
    collector: SnapshotSummaryCollector,
}

impl<'a> SnapshotProducer<'a> {
    fn new(
        table: &'a TableName,
        metadata: &'a TableMetadata,
        file_io: &'a FileIO,
    ) -> SnapshotProducer<'a> {
        SnapshotProducer {
            table,
            metadata,
            file_io,
            snapshot_id: new_snapshot_id(metadata),
            sequence_number: metadata.next_sequence_number(),
            paths: CommitPaths {
                metadata_folder: format!("{}/metadata", metadata.location()),
                commit_id: Uuid::new_v4(),
                manifests_written: 0,
            },
            collector: SnapshotSummaryCollector::default(),
        }
    }

    /// Writes the snapshot's manifests and manifest list and returns the snapshot: the
    /// manifest of `files` first, then the current snapshot's manifests as `operation` carries
    /// them over, merged as it asks.
    async fn produce(
        mut self,
        operation: &dyn SnapshotProduceOperation,
        files: Vec<DataFile>,
        properties: &HashMap<String, String>,
    ) -> Result<Produced> {
        let added = FileCounts::of(&files);
        let mut manifests: Vec<ManifestFile> = Vec::new();
        manifests.extend(self.write_added_manifest(files).await?);
        let (carried, deleted) = CurrentManifests {
            table: self.table,
            metadata: self.metadata,
            file_io: self.file_io,
            snapshot_id: self.snapshot_id,
            collector: &mut self.collector,
            next_manifest_path: || self.paths.next_manifest(),
            deleted: FileCounts::default(),
        }
        .carry(operation)
        .await?;
        manifests.extend(carried);
        let manifests = self.merge(operation, manifests).await?;
        let manifest_list_path = self.write_manifest_list(manifests).await?;
        let summary = self.summary(operation, properties, &added, &deleted);
        let snapshot = Snapshot::builder()
            .with_snapshot_id(self.snapshot_id)
            .with_parent_snapshot_id(self.metadata.current_snapshot_id())
            .with_sequence_number(self.sequence_number)
            .with_timestamp_ms(crate::fault::wall_now().timestamp_millis())
            .with_manifest_list(manifest_list_path)
            .with_summary(summary)
            .with_schema_id(self.metadata.current_schema_id())
            .build();
        Ok(Produced {
            snapshot,
            added,
            deleted,
        })
    }

    /// Writes the manifest of the new files, all ADDED at this snapshot's sequence number and
    /// counted in the summary; none without new files.
    async fn write_added_manifest(&mut self, files: Vec<DataFile>) -> Result<Option<ManifestFile>> {
        if files.is_empty() {
            return Ok(None);
        }
        let schema = self.metadata.current_schema().clone();
        let spec = self.metadata.default_partition_spec().clone();
        let output = self.file_io.new_output(self.paths.next_manifest())?;
        let mut writer = ManifestWriterBuilder::new(
            output,
            Some(self.snapshot_id),
            schema.clone(),
            spec.as_ref().clone(),
        )
        .build_v2_data();
        for file in files {
            self.collector.add_file(&file, schema.clone(), spec.clone());
            writer.add_file(file, self.sequence_number)?;
        }
        Ok(Some(writer.write_manifest_file().await?))
    }

    /// `manifests` with the data manifests `operation` merges merged into one (as they are when
    /// it merges none).
    async fn merge(
        &mut self,
        operation: &dyn SnapshotProduceOperation,
        manifests: Vec<ManifestFile>,
    ) -> Result<Vec<ManifestFile>> {
        let Some(which) = operation.merge() else {
            return Ok(manifests);
        };
        merge_manifests(
            which,
            self.table,
            manifests,
            self.metadata,
            self.file_io,
            self.snapshot_id,
            &mut || self.paths.next_manifest(),
        )
        .await
    }

    /// Writes the snapshot's manifest list of `manifests` and returns its path.
    async fn write_manifest_list(&self, manifests: Vec<ManifestFile>) -> Result<String> {
        let manifest_list_path = self.paths.manifest_list(self.snapshot_id);
        let mut list_writer = ManifestListWriter::v2(
            self.file_io
                .new_output(&manifest_list_path)?
                .writer()
                .await?,
            self.snapshot_id,
            self.metadata.current_snapshot_id(),
            self.sequence_number,
        );
        list_writer.add_manifests(manifests.into_iter())?;
        list_writer.close().await?;
        Ok(manifest_list_path)
    }

    /// The snapshot's summary: the job's `properties`, the collector's added/deleted counts, the
    /// mode's own properties, then the table totals after it; the operation the mode records.
    fn summary(
        &self,
        operation: &dyn SnapshotProduceOperation,
        properties: &HashMap<String, String>,
        added: &FileCounts,
        deleted: &FileCounts,
    ) -> Summary {
        let mut props = properties.clone();
        props.extend(self.collector.build());
        let previous = self.metadata.current_snapshot();
        operation.summary_properties(previous, &mut props);
        for (k, v) in counts::totals(previous, added, deleted) {
            props.insert(k.to_string(), v.to_string());
        }
        Summary {
            operation: operation.operation(added.files),
            additional_properties: props,
        }
    }
}

/// A fresh, positive snapshot id that `metadata` does not hold yet.
fn new_snapshot_id(metadata: &TableMetadata) -> i64 {
    loop {
        let (a, b) = Uuid::new_v4().as_u64_pair();
        let id = ((a ^ b) & (i64::MAX as u64)) as i64;
        if id != 0 && metadata.snapshot_by_id(id).is_none() {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use iceberg::spec::ManifestStatus::{Added, Deleted, Existing};
    use iceberg::spec::Operation;

    use super::*;
    use crate::commit::fixture::{months, published, Warehouse, MARCH_2024};
    use crate::commit::summary;

    fn number(staged: &StagedTable, key: &str) -> u64 {
        summary::total(staged.metadata.snapshot_by_id(staged.snapshot_id), key)
    }

    fn operation(staged: &StagedTable) -> Operation {
        staged
            .metadata
            .snapshot_by_id(staged.snapshot_id)
            .map(|s| s.summary().operation.clone())
            .expect("snapshot")
    }

    #[tokio::test]
    async fn an_append_adds_its_files_and_carries_live_manifests_untouched() {
        let w = Warehouse::new();
        let t = w.new_table("bronze", "orders");
        let files = vec![
            w.file(&t, "a", MARCH_2024, 10),
            w.file(&t, "b", MARCH_2024 + 1, 5),
        ];
        let first = w.stage(t, files, WriteMode::Append).await;
        assert_eq!(
            w.entries(&first).await,
            vec![
                ("a".into(), Added, Some(first.snapshot_id), Some(1)),
                ("b".into(), Added, Some(first.snapshot_id), Some(1)),
            ]
        );
        assert_eq!(operation(&first), Operation::Append);
        assert_eq!(number(&first, summary::TOTAL_RECORDS), 15);
        assert_eq!(number(&first, summary::TOTAL_DATA_FILES), 2);
        // The staged snapshot is not on `main` yet.
        assert_eq!(first.metadata.current_snapshot_id(), None);

        let t = published(&first);
        let c = w.file(&t, "c", MARCH_2024 + 2, 7);
        let second = w.stage(t, vec![c], WriteMode::Append).await;
        assert_eq!(
            w.entries(&second).await,
            vec![
                ("a".into(), Added, Some(first.snapshot_id), Some(1)),
                ("b".into(), Added, Some(first.snapshot_id), Some(1)),
                ("c".into(), Added, Some(second.snapshot_id), Some(2)),
            ]
        );
        // The first snapshot's manifest is carried over as it is, not rewritten.
        let carried = w.manifest_paths(&first).await;
        assert!(carried.is_subset(&w.manifest_paths(&second).await));
        assert_eq!(number(&second, summary::ADDED_RECORDS), 7);
        assert_eq!(number(&second, summary::TOTAL_RECORDS), 22);
        assert_eq!(number(&second, summary::TOTAL_DATA_FILES), 3);
        assert_eq!(
            second
                .metadata
                .snapshot_by_id(second.snapshot_id)
                .and_then(|s| s.parent_snapshot_id()),
            Some(first.snapshot_id)
        );
    }

    #[tokio::test]
    async fn an_overwrite_deletes_every_live_file_keeping_its_sequence_number() {
        let w = Warehouse::new();
        let t = w.new_table("silver", "orders");
        let files = vec![
            w.file(&t, "a", MARCH_2024, 10),
            w.file(&t, "b", MARCH_2024 + 1, 5),
        ];
        let first = w.stage(t, files, WriteMode::Append).await;
        let t = published(&first);
        let d = w.file(&t, "d", MARCH_2024, 4);
        let second = w.stage(t, vec![d], WriteMode::Overwrite).await;
        assert_eq!(
            w.entries(&second).await,
            vec![
                ("a".into(), Deleted, Some(second.snapshot_id), Some(1)),
                ("b".into(), Deleted, Some(second.snapshot_id), Some(1)),
                ("d".into(), Added, Some(second.snapshot_id), Some(2)),
            ]
        );
        assert_eq!(operation(&second), Operation::Overwrite);
        assert_eq!(number(&second, summary::DELETED_RECORDS), 15);
        assert_eq!(number(&second, summary::TOTAL_RECORDS), 4);
        assert_eq!(number(&second, summary::TOTAL_DATA_FILES), 1);
        assert_eq!(second.deleted_rows, 15);
    }

    #[tokio::test]
    async fn a_replace_deletes_only_its_partitions_and_skips_manifests_outside_them() {
        let w = Warehouse::new();
        let t = w.new_table("silver", "orders");
        let files = vec![
            w.file(&t, "a", MARCH_2024, 10),
            w.file(&t, "b", MARCH_2024 + 1, 5),
        ];
        let first = w.stage(t, files, WriteMode::Append).await;
        let t = published(&first);
        let c = w.file(&t, "c", MARCH_2024 + 5, 3);
        let second = w.stage(t, vec![c], WriteMode::Append).await;
        let outside: BTreeSet<String> = w
            .manifest_paths(&second)
            .await
            .difference(&w.manifest_paths(&first).await)
            .cloned()
            .collect();

        let t = published(&second);
        let e = w.file(&t, "e", MARCH_2024, 8);
        let third = w
            .stage(t, vec![e], WriteMode::Replace(months(&[MARCH_2024])))
            .await;
        assert_eq!(
            w.entries(&third).await,
            vec![
                ("a".into(), Deleted, Some(third.snapshot_id), Some(1)),
                // Kept, in the rewritten manifest, as the snapshot that added it wrote it.
                ("b".into(), Existing, Some(first.snapshot_id), Some(1)),
                ("c".into(), Added, Some(second.snapshot_id), Some(2)),
                ("e".into(), Added, Some(third.snapshot_id), Some(3)),
            ]
        );
        // The manifest holding only May's file proves it holds nothing of March: carried
        // over unread.
        assert!(outside.is_subset(&w.manifest_paths(&third).await));
        assert_eq!(operation(&third), Operation::Overwrite);
        let properties = &third
            .metadata
            .snapshot_by_id(third.snapshot_id)
            .expect("snapshot")
            .summary()
            .additional_properties;
        assert_eq!(properties[summary::REPLACE_PARTITIONS], "true");
        assert_eq!(
            properties[summary::PARTITIONS],
            "month(order_date) in 2024-03"
        );
        assert_eq!(number(&third, summary::TOTAL_RECORDS), 5 + 3 + 8);
        assert_eq!(number(&third, summary::DELETED_DATA_FILES), 1);
    }

    #[tokio::test]
    async fn a_replace_without_new_files_is_a_delete() {
        let w = Warehouse::new();
        let t = w.new_table("silver", "orders");
        let files = vec![
            w.file(&t, "a", MARCH_2024, 10),
            w.file(&t, "b", MARCH_2024 + 1, 5),
        ];
        let first = w.stage(t, files, WriteMode::Append).await;
        let gone = w
            .stage(
                published(&first),
                Vec::new(),
                WriteMode::Replace(months(&[MARCH_2024 + 1])),
            )
            .await;
        assert_eq!(operation(&gone), Operation::Delete);
        assert_eq!(
            w.entries(&gone).await,
            vec![
                ("a".into(), Existing, Some(first.snapshot_id), Some(1)),
                ("b".into(), Deleted, Some(gone.snapshot_id), Some(1)),
            ]
        );
        assert_eq!(number(&gone, summary::TOTAL_RECORDS), 10);
    }

    #[tokio::test]
    async fn a_replace_refuses_a_file_outside_its_partitions() {
        let w = Warehouse::new();
        let t = w.new_table("silver", "orders");
        let stray = w.file(&t, "stray", MARCH_2024 + 1, 1);
        let result = stage_snapshot(
            t,
            vec![stray],
            &w.file_io,
            HashMap::new(),
            WriteMode::Replace(months(&[MARCH_2024])),
        )
        .await;
        let message = result.err().expect("refused").to_string();
        assert!(
            message.contains("outside the partitions being replaced"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn a_rewrite_deletes_the_files_it_names_and_keeps_the_others() {
        let w = Warehouse::new();
        let t = w.new_table("bronze", "orders");
        let files = vec![
            w.file(&t, "a", MARCH_2024, 10),
            w.file(&t, "b", MARCH_2024, 5),
        ];
        let first = w.stage(t, files, WriteMode::Append).await;
        let t = published(&first);
        let a_path = w.file(&t, "a", MARCH_2024, 10).file_path().to_string();
        let rewritten = w.file(&t, "a2", MARCH_2024, 9);
        let second = w
            .stage(
                t,
                vec![rewritten],
                WriteMode::Rewrite(BTreeSet::from([a_path])),
            )
            .await;
        assert_eq!(
            w.entries(&second).await,
            vec![
                ("a".into(), Deleted, Some(second.snapshot_id), Some(1)),
                ("a2".into(), Added, Some(second.snapshot_id), Some(2)),
                ("b".into(), Existing, Some(first.snapshot_id), Some(1)),
            ]
        );
        assert_eq!(number(&second, summary::TOTAL_RECORDS), 5 + 9);
    }
}
