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

use std::collections::HashMap;

use iceberg::io::FileIO;
use iceberg::spec::{
    DataFile, FormatVersion, ManifestContentType, ManifestFile, ManifestListWriter,
    ManifestWriterBuilder, Operation, Snapshot, SnapshotSummaryCollector, Summary,
};
use uuid::Uuid;

use super::manifests::manifest_list;
use super::merge::{merge_manifests, Merge};
use super::staged::{StagedTable, WriteMode};
use super::summary;
use super::target::TableTarget;
use crate::error::{Error, Result};

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
    if metadata.format_version() != FormatVersion::V2 {
        return Err(Error::table_msg(
            &table,
            format!(
                "format version {} is not supported for writes yet (v2 is)",
                metadata.format_version()
            ),
        ));
    }
    if let WriteMode::Replace(range) = &mode {
        if let Some(f) = files.iter().find(|f| {
            !range
                .contains(metadata.default_partition_spec(), f.partition())
                .unwrap_or(false)
        }) {
            return Err(Error::Internal(format!(
                "{table}: file {} is outside the partitions being replaced ({range})",
                f.file_path()
            )));
        }
    }
    let staged_files = files.clone();
    let snapshot_id = new_snapshot_id(&metadata);
    let sequence_number = metadata.next_sequence_number();
    let parent = metadata.current_snapshot_id();
    let commit_id = Uuid::new_v4();
    let schema = metadata.current_schema().clone();
    let spec = metadata.default_partition_spec().clone();
    let mut collector = SnapshotSummaryCollector::default();
    let mut manifests: Vec<ManifestFile> = Vec::new();
    let mut manifest_no = 0;
    let mut next_manifest_path = || {
        manifest_no += 1;
        format!(
            "{}/metadata/{commit_id}-m{manifest_no}.avro",
            metadata.location()
        )
    };

    // New files.
    let (added_rows, added_files, added_bytes) = (
        files.iter().map(|f| f.record_count()).sum::<u64>(),
        files.len() as u64,
        files.iter().map(|f| f.file_size_in_bytes()).sum::<u64>(),
    );
    if !files.is_empty() {
        let output = file_io.new_output(next_manifest_path())?;
        let mut writer = ManifestWriterBuilder::new(
            output,
            Some(snapshot_id),
            schema.clone(),
            spec.as_ref().clone(),
        )
        .build_v2_data();
        for file in files {
            collector.add_file(&file, schema.clone(), spec.clone());
            writer.add_file(file, sequence_number)?;
        }
        manifests.push(writer.write_manifest_file().await?);
    }

    // The current snapshot's manifests: carried over, or rewritten with DELETED entries.
    let (mut deleted_rows, mut deleted_files, mut deleted_bytes) = (0u64, 0u64, 0u64);
    if let Some(current) = metadata.current_snapshot() {
        let unreadable = |e| unreadable_snapshot(&table, current, e);
        let list = manifest_list(file_io, &metadata, current)
            .await
            .map_err(unreadable)?;
        for manifest_file in list.entries() {
            if !manifest_file.has_added_files() && !manifest_file.has_existing_files() {
                continue; // only DELETED entries: history, not content
            }
            let manifest_spec = metadata
                .partition_spec_by_id(manifest_file.partition_spec_id)
                .cloned()
                .unwrap_or_else(|| spec.clone());
            let touched = match &mode {
                WriteMode::Append | WriteMode::RewriteManifests => false,
                WriteMode::Overwrite | WriteMode::Rewrite(_) | WriteMode::Compact(_) => true,
                WriteMode::Replace(range) => {
                    range.may_touch(&manifest_spec, manifest_file.partitions.as_deref())
                }
            };
            if !touched {
                manifests.push(manifest_file.clone());
                continue;
            }
            let manifest = manifest_file
                .load_manifest(file_io)
                .await
                .map_err(|e| unreadable(e.into()))?;
            let mut removed = Vec::new();
            let mut kept = Vec::new();
            for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
                let remove = match &mode {
                    WriteMode::Replace(range) => range
                        .contains(&manifest_spec, entry.data_file().partition())
                        .map_err(|m| {
                            Error::table_msg(
                                &table,
                                format!(
                                    "{m}: the table has files of an older partition spec; \
                                     run the job as a full refresh first"
                                ),
                            )
                        })?,
                    WriteMode::Rewrite(paths) | WriteMode::Compact(paths) => {
                        paths.contains(entry.file_path())
                    }
                    _ => true,
                };
                if remove {
                    removed.push(entry);
                } else {
                    kept.push(entry);
                }
            }
            if removed.is_empty() {
                manifests.push(manifest_file.clone());
                continue;
            }
            let output = file_io.new_output(next_manifest_path())?;
            let builder = ManifestWriterBuilder::new(
                output,
                Some(snapshot_id),
                schema.clone(),
                manifest_spec.as_ref().clone(),
            );
            let mut writer = match manifest_file.content {
                ManifestContentType::Data => builder.build_v2_data(),
                ManifestContentType::Deletes => builder.build_v2_deletes(),
            };
            let sequence_of = |entry: &iceberg::spec::ManifestEntry| {
                entry.sequence_number().ok_or_else(|| {
                    Error::table_msg(
                        &table,
                        format!(
                            "manifest entry for {} has no sequence number",
                            entry.data_file().file_path()
                        ),
                    )
                })
            };
            for entry in removed {
                let file = entry.data_file().clone();
                collector.remove_file(&file, schema.clone(), manifest_spec.clone());
                deleted_rows += file.record_count();
                deleted_files += 1;
                deleted_bytes += file.file_size_in_bytes();
                let seq = sequence_of(entry)?;
                writer.add_delete_file(file, seq, entry.file_sequence_number)?;
            }
            for entry in kept {
                let seq = sequence_of(entry)?;
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
            manifests.push(writer.write_manifest_file().await?);
        }
    }

    if mode == WriteMode::Append || mode == WriteMode::RewriteManifests {
        let which = if mode == WriteMode::Append {
            Merge::Small
        } else {
            Merge::All
        };
        manifests = merge_manifests(
            which,
            &table,
            manifests,
            &metadata,
            file_io,
            snapshot_id,
            &mut next_manifest_path,
        )
        .await?;
    }

    let manifest_list_path = format!(
        "{}/metadata/snap-{snapshot_id}-1-{commit_id}.avro",
        metadata.location()
    );
    let mut list_writer = ManifestListWriter::v2(
        file_io.new_output(&manifest_list_path)?.writer().await?,
        snapshot_id,
        parent,
        sequence_number,
    );
    list_writer.add_manifests(manifests.into_iter())?;
    list_writer.close().await?;

    let mut props = properties.clone();
    props.extend(collector.build());
    if mode.keeps_data() {
        if let Some(parent) = metadata.current_snapshot() {
            for key in summary::CARRIED_BY_REPLACE {
                if let Some(value) = parent.summary().additional_properties.get(*key) {
                    props
                        .entry(key.to_string())
                        .or_insert_with(|| value.clone());
                }
            }
        }
    }
    if let WriteMode::Replace(range) = &mode {
        // What Spark writes for a dynamic partition overwrite, plus the range itself.
        props.insert(summary::REPLACE_PARTITIONS.into(), "true".into());
        props.insert(summary::PARTITIONS.into(), range.to_string());
    }
    let previous = metadata.current_snapshot();
    let after = |key: &str, added: u64, deleted: u64| {
        let before = summary::total(previous, key) + added;
        before - deleted.min(before)
    };
    let totals = [
        (
            summary::TOTAL_RECORDS,
            after(summary::TOTAL_RECORDS, added_rows, deleted_rows),
        ),
        (
            summary::TOTAL_DATA_FILES,
            after(summary::TOTAL_DATA_FILES, added_files, deleted_files),
        ),
        (
            summary::TOTAL_FILES_SIZE,
            after(summary::TOTAL_FILES_SIZE, added_bytes, deleted_bytes),
        ),
        (summary::TOTAL_DELETE_FILES, 0),
        (summary::TOTAL_POSITION_DELETES, 0),
        (summary::TOTAL_EQUALITY_DELETES, 0),
    ];
    for (k, v) in totals {
        props.insert(k.to_string(), v.to_string());
    }
    let snapshot = Snapshot::builder()
        .with_snapshot_id(snapshot_id)
        .with_parent_snapshot_id(parent)
        .with_sequence_number(sequence_number)
        .with_timestamp_ms(chrono::Utc::now().timestamp_millis())
        .with_manifest_list(manifest_list_path)
        .with_summary(Summary {
            operation: match &mode {
                WriteMode::Overwrite => Operation::Overwrite,
                WriteMode::Append => Operation::Append,
                WriteMode::Replace(_) if added_files == 0 => Operation::Delete,
                WriteMode::Replace(_) | WriteMode::Rewrite(_) => Operation::Overwrite,
                WriteMode::Compact(_) | WriteMode::RewriteManifests => Operation::Replace,
            },
            additional_properties: props,
        })
        .with_schema_id(metadata.current_schema_id())
        .build();
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
        added_rows,
        added_files,
        added_bytes,
        deleted_rows,
        mode,
        files: staged_files,
        properties,
    })
}

/// The error for a table whose current snapshot cannot be read (its manifest list or a
/// manifest is missing or damaged), with the way back: roll back the run that wrote it.
fn unreadable_snapshot(
    table: &crate::spec::TableName,
    snapshot: &iceberg::spec::SnapshotRef,
    cause: Error,
) -> Error {
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

fn new_snapshot_id(metadata: &iceberg::spec::TableMetadata) -> i64 {
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
            "order_date_month in 2024-03"
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
