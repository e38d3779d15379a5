//! The snapshots a job produces, all with honest summaries (added/deleted files and records,
//! totals) and sequence numbers preserved on every carried-over entry:
//!
//! - **append**: new files ADDED; every live manifest of the current snapshot is carried over
//!   untouched (commit cost grows with what changed, not with the table or its history);
//! - **overwrite**: new files ADDED; every live file DELETED in rewritten manifests;
//! - **replace** (partitions of a [`PartitionRange`]): new files ADDED; live files in the range
//!   DELETED, the other live files of the same manifests EXISTING; manifests whose partition
//!   summary proves they hold no selected file are carried over without being read. With no new
//!   files this is a **delete** of those partitions.

use std::collections::{BTreeSet, HashMap};

use iceberg::io::FileIO;
use iceberg::spec::{
    DataFile, FormatVersion, ManifestContentType, ManifestFile, ManifestListWriter,
    ManifestWriterBuilder, Operation, Snapshot, SnapshotSummaryCollector, Summary,
};
use uuid::Uuid;

use super::{PartitionRange, StagedTable, TableTarget};
use crate::error::{Error, Result};

/// How a staged snapshot relates to the table's current content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteMode {
    /// The new files replace everything.
    Overwrite,
    /// The new files are added to what is there.
    Append,
    /// The new files replace the partitions of the range; all other files stay as they are.
    Replace(PartitionRange),
    /// The listed data files (by path) are deleted, the new files added (copy-on-write row
    /// removal, e.g. the old rows of a reloaded source file).
    Rewrite(BTreeSet<String>),
}

impl WriteMode {
    /// The word the run record and messages use.
    pub fn name(&self) -> &'static str {
        match self {
            WriteMode::Overwrite => "overwrite",
            WriteMode::Append => "append",
            WriteMode::Replace(_) => "replace_partitions",
            WriteMode::Rewrite(_) => "rewrite",
        }
    }
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
            return Err(Error::table_msg(
                &table,
                format!(
                    "internal: file {} is outside the partitions being replaced ({range})",
                    f.file_path()
                ),
            ));
        }
    }
    let staged_files = files.clone();
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

    // The current snapshot's manifests: carried over, or rewritten with DELETED entries.
    let (mut deleted_rows, mut deleted_files, mut deleted_bytes) = (0u64, 0u64, 0u64);
    if let Some(current) = metadata.current_snapshot() {
        let list = super::manifest_list(file_io, &metadata, current).await?;
        for manifest_file in list.entries() {
            if !manifest_file.has_added_files() && !manifest_file.has_existing_files() {
                continue; // only DELETED entries: history, not content
            }
            let manifest_spec = metadata
                .partition_spec_by_id(manifest_file.partition_spec_id)
                .cloned()
                .unwrap_or_else(|| spec.clone());
            let touched = match &mode {
                WriteMode::Append => false,
                WriteMode::Overwrite | WriteMode::Rewrite(_) => true,
                WriteMode::Replace(range) => {
                    range.may_touch(&manifest_spec, manifest_file.partitions.as_deref())
                }
            };
            if !touched {
                manifests.push(manifest_file.clone());
                continue;
            }
            let manifest = manifest_file.load_manifest(file_io).await?;
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
                    WriteMode::Rewrite(paths) => paths.contains(entry.file_path()),
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
                summary.remove_file(&file, schema.clone(), manifest_spec.clone());
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

    if mode == WriteMode::Append {
        manifests = merge_small_manifests(
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
    props.extend(summary.build());
    if let WriteMode::Replace(range) = &mode {
        // What Spark writes for a dynamic partition overwrite, plus the range itself.
        props.insert("replace-partitions".into(), "true".into());
        props.insert("pipeline.partitions".into(), range.to_string());
    }
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
            operation: match &mode {
                WriteMode::Overwrite => Operation::Overwrite,
                WriteMode::Append => Operation::Append,
                WriteMode::Replace(_) if added_files == 0 => Operation::Delete,
                WriteMode::Replace(_) | WriteMode::Rewrite(_) => Operation::Overwrite,
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

/// Carried data manifests smaller than this count as small.
const SMALL_MANIFEST_BYTES: i64 = 32 * 1024;
/// How many small manifests an append lets accumulate before merging them into one.
const MERGE_MIN_COUNT: usize = 100;

/// Iceberg's merge-append: when an append would carry [`MERGE_MIN_COUNT`] or more small data
/// manifests of the current partition spec (one per earlier small append), their live entries
/// are rewritten as EXISTING entries (snapshot ids and sequence numbers kept) into one
/// manifest. This bounds the manifest list, so the cost of the next commits (and of every
/// reader's scan planning) does not grow with the number of appends.
async fn merge_small_manifests(
    manifests: Vec<ManifestFile>,
    metadata: &iceberg::spec::TableMetadata,
    file_io: &FileIO,
    snapshot_id: i64,
    next_manifest_path: &mut impl FnMut() -> String,
) -> Result<Vec<ManifestFile>> {
    let spec = metadata.default_partition_spec();
    let is_small = |m: &ManifestFile| {
        m.content == ManifestContentType::Data
            && m.partition_spec_id == spec.spec_id()
            && m.added_snapshot_id != snapshot_id
            && m.manifest_length < SMALL_MANIFEST_BYTES
    };
    if manifests.iter().filter(|m| is_small(m)).count() < MERGE_MIN_COUNT {
        return Ok(manifests);
    }
    let (small, mut kept): (Vec<_>, Vec<_>) = manifests.into_iter().partition(|m| is_small(m));
    let output = file_io.new_output(next_manifest_path())?;
    let mut writer = ManifestWriterBuilder::new(
        output,
        Some(snapshot_id),
        metadata.current_schema().clone(),
        spec.as_ref().clone(),
    )
    .build_v2_data();
    for m in &small {
        let manifest = m.load_manifest(file_io).await?;
        for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
            let seq = entry.sequence_number().ok_or_else(|| {
                Error::Usage(format!(
                    "manifest entry for {} has no sequence number",
                    entry.file_path()
                ))
            })?;
            writer.add_existing_file(
                entry.data_file().clone(),
                entry.snapshot_id().unwrap_or(m.added_snapshot_id),
                seq,
                entry.file_sequence_number,
            )?;
        }
    }
    kept.push(writer.write_manifest_file().await?);
    Ok(kept)
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
