//! Which files a compaction rewrites. Per partition of the current partition spec, the live
//! data files smaller than the small-file size are candidates; a partition with at least
//! `min_input_files` candidates is compacted (all its candidates, into files of the target
//! size). Files of an older partition spec are left alone, and a table with delete files
//! (written by another engine) is not compacted at all: its rows are that engine's to merge.

use std::collections::BTreeMap;

use iceberg::io::FileIO;
use iceberg::spec::{DataContentType, ManifestContentType, Struct, TableMetadata};
use serde::Serialize;

use crate::commit::{load_manifests, manifest_list, partition_label};
use crate::error::Result;

/// The thresholds of one table's compaction.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Files are written at this size.
    pub target: usize,
    /// Files below this size are candidates.
    pub small_below: usize,
    /// A partition needs at least this many candidates.
    pub min_input_files: usize,
}

/// One partition's files to compact.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// e.g. `order_date_month=2026-03` (empty: unpartitioned).
    pub partition: String,
    #[serde(skip)]
    pub key: Struct,
    pub files: Vec<String>,
    pub bytes: u64,
    pub records: u64,
}

/// What compacting a table's current snapshot would do.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CompactionPlan {
    /// The snapshot the plan was made on.
    #[serde(with = "crate::id_text::option", default)]
    pub snapshot: Option<i64>,
    pub groups: Vec<Group>,
    /// Live data files and data manifests of the current snapshot.
    pub data_files: u64,
    pub data_manifests: u64,
    /// The most data files any partition holds.
    pub max_files_per_partition: u64,
    /// Why the table is not compacted at all, when it is not.
    pub skipped: Option<String>,
}

impl CompactionPlan {
    /// Files the compaction replaces.
    pub fn input_files(&self) -> usize {
        self.groups.iter().map(|g| g.files.len()).sum()
    }
}

/// Plans the compaction of `metadata`'s current snapshot with `sizes`.
pub async fn select(
    file_io: &FileIO,
    metadata: &TableMetadata,
    sizes: Sizes,
) -> Result<CompactionPlan> {
    let mut plan = CompactionPlan::default();
    let Some(snapshot) = metadata.current_snapshot() else {
        return Ok(plan);
    };
    plan.snapshot = Some(snapshot.snapshot_id());
    let spec = metadata.default_partition_spec();
    let list = manifest_list(file_io, metadata, snapshot).await?;
    // Per partition key: (label, candidates (path, bytes, records), files in the partition).
    type Candidates = Vec<(String, u64, u64)>;
    let mut partitions: BTreeMap<String, (Struct, Candidates, u64)> = BTreeMap::new();
    let mut data_manifests = Vec::new();
    for manifest_file in list.entries() {
        if manifest_file.content == ManifestContentType::Deletes {
            if manifest_file.has_added_files() || manifest_file.has_existing_files() {
                plan.skipped = Some(
                    "it has delete files (written by another engine); compact it with that engine"
                        .into(),
                );
                plan.groups.clear();
                return Ok(plan);
            }
            continue;
        }
        data_manifests.push(manifest_file.clone());
    }
    plan.data_manifests = data_manifests.len() as u64;
    for (manifest_file, manifest) in load_manifests(file_io, data_manifests).await? {
        for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
            let file = entry.data_file();
            if file.content_type() != DataContentType::Data {
                continue;
            }
            plan.data_files += 1;
            let label = if manifest_file.partition_spec_id == spec.spec_id() {
                partition_label(spec, file.partition())
            } else {
                format!(
                    "(spec {}) {:?}",
                    manifest_file.partition_spec_id,
                    file.partition()
                )
            };
            let slot = partitions
                .entry(label)
                .or_insert_with(|| (file.partition().clone(), Vec::new(), 0));
            slot.2 += 1;
            if manifest_file.partition_spec_id == spec.spec_id()
                && (file.file_size_in_bytes() as usize) < sizes.small_below
            {
                slot.1.push((
                    file.file_path().to_string(),
                    file.file_size_in_bytes(),
                    file.record_count(),
                ));
            }
        }
    }
    plan.max_files_per_partition = partitions.values().map(|p| p.2).max().unwrap_or(0);
    for (label, (key, candidates, _)) in partitions {
        if candidates.len() < sizes.min_input_files {
            continue;
        }
        plan.groups.push(Group {
            partition: label,
            key,
            bytes: candidates.iter().map(|c| c.1).sum(),
            records: candidates.iter().map(|c| c.2).sum(),
            files: candidates.into_iter().map(|c| c.0).collect(),
        });
    }
    Ok(plan)
}
