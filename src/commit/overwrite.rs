//! The two snapshots a job produces. Overwrite: new files ADDED, every live file of the current
//! snapshot DELETED in rewritten manifests (sequence numbers preserved). Append: new files
//! ADDED, every live manifest of the current snapshot carried over untouched (commit cost grows
//! with what changed, not with the table). Both with honest summary counts and totals.

use std::collections::HashMap;

use iceberg::io::FileIO;
use iceberg::spec::{
    DataFile, FormatVersion, ManifestContentType, ManifestFile, ManifestList, ManifestListWriter,
    ManifestStatus, ManifestWriterBuilder, Operation, Snapshot, SnapshotSummaryCollector, Summary,
};
use uuid::Uuid;

use super::{StagedTable, TableTarget};
use crate::error::{Error, Result};

/// How a staged snapshot relates to the table's current content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// The new files replace everything.
    Overwrite,
    /// The new files are added to what is there.
    Append,
}

/// Stages a snapshot that replaces the whole content of `target` with `files`. The snapshot is
/// added to the metadata but `main` is not moved: see [`StagedTable::into_change`].
pub async fn stage_overwrite(
    target: TableTarget,
    files: Vec<DataFile>,
    file_io: &FileIO,
    properties: HashMap<String, String>,
) -> Result<StagedTable> {
    stage_snapshot(target, files, file_io, properties, WriteMode::Overwrite).await
}

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
    let snapshot_id = new_snapshot_id(&metadata);
    let sequence_number = metadata.next_sequence_number();
    let parent = metadata.current_snapshot_id();
    let commit_id = Uuid::new_v4();
    let schema = metadata.current_schema().clone();
    let spec = metadata.default_partition_spec().clone();
    let mut summary = SnapshotSummaryCollector::default();
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
            summary.add_file(&file, schema.clone(), spec.clone());
            writer.add_file(file, sequence_number)?;
        }
        manifests.push(writer.write_manifest_file().await?);
    }

    // Every live file of the current snapshot is deleted.
    let (mut deleted_rows, mut deleted_files, mut deleted_bytes) = (0u64, 0u64, 0u64);
    if let Some(current) = metadata.current_snapshot() {
        let bytes = file_io
            .new_input(current.manifest_list())?
            .read()
            .await
            .map_err(|e| Error::table(&table, "cannot read the current manifest list", e))?;
        let list = ManifestList::parse_with_version(&bytes, metadata.format_version())?;
        for manifest_file in list.entries() {
            if mode == WriteMode::Append {
                if manifest_file.has_added_files() || manifest_file.has_existing_files() {
                    manifests.push(manifest_file.clone());
                }
                continue;
            }
            let manifest = manifest_file.load_manifest(file_io).await?;
            let live: Vec<_> = manifest.entries().iter().filter(|e| e.is_alive()).collect();
            if live.is_empty() {
                continue;
            }
            let manifest_spec = metadata
                .partition_spec_by_id(manifest_file.partition_spec_id)
                .cloned()
                .unwrap_or_else(|| spec.clone());
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
            for entry in live {
                debug_assert!(entry.status() != ManifestStatus::Deleted);
                let file = entry.data_file().clone();
                summary.remove_file(&file, schema.clone(), manifest_spec.clone());
                deleted_rows += file.record_count();
                deleted_files += 1;
                deleted_bytes += file.file_size_in_bytes();
                let seq = entry.sequence_number().ok_or_else(|| {
                    Error::table_msg(
                        &table,
                        format!(
                            "manifest entry for {} has no sequence number",
                            file.file_path()
                        ),
                    )
                })?;
                writer.add_delete_file(file, seq, entry.file_sequence_number)?;
            }
            manifests.push(writer.write_manifest_file().await?);
        }
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

    let mut props = properties;
    props.extend(summary.build());
    let previous = metadata.current_snapshot().map(|s| s.summary().clone());
    let prev_total = |key: &str| -> u64 {
        previous
            .as_ref()
            .and_then(|s| s.additional_properties.get(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let totals = [
        (
            "total-records",
            prev_total("total-records") + added_rows
                - deleted_rows.min(prev_total("total-records") + added_rows),
        ),
        (
            "total-data-files",
            prev_total("total-data-files") + added_files
                - deleted_files.min(prev_total("total-data-files") + added_files),
        ),
        (
            "total-files-size",
            prev_total("total-files-size") + added_bytes
                - deleted_bytes.min(prev_total("total-files-size") + added_bytes),
        ),
        ("total-delete-files", 0),
        ("total-position-deletes", 0),
        ("total-equality-deletes", 0),
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
            operation: match mode {
                WriteMode::Overwrite => Operation::Overwrite,
                WriteMode::Append => Operation::Append,
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
    })
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
