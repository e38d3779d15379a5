//! Snapshot retention (`[retention] max_snapshots` in the spec): a table's metadata file holds
//! every snapshot, and every commit reads and writes it, so an unbounded history makes commits
//! slower and slower. When a table holds more than `max_snapshots` (plus a quarter, so the work
//! is done in batches), the oldest are expired at its next commit:
//!
//! - the newest `max_snapshots` snapshots of `main`'s history are kept, and every snapshot at
//!   least as new as the oldest of them;
//! - an older snapshot is kept too when a kept snapshot off `main` (e.g. a rolled-back run's)
//!   descends from it;
//! - the file ledger entries of expired `main` snapshots move into a checkpoint file (named by
//!   a table property) in the same commit, so no loaded file is ever loaded twice;
//! - nothing is deleted: the files only expired snapshots used are what `pipeline orphans`
//!   lists. Time travel and rollback to an expired snapshot stop working, with a clear error.

use std::collections::{HashMap, HashSet};

use iceberg::io::FileIO;
use iceberg::spec::TableMetadata;

use super::ledger::{self, CheckpointEntry, LoadedFile, CHECKPOINT_KEY};
use super::staged::StagedTable;
use super::summary::LOADED_FILES;
use crate::error::Result;

/// Expires the oldest snapshots of a staged table beyond `keep` (see the module doc).
/// Returns how many were expired.
pub async fn expire_snapshots(
    staged: &mut StagedTable,
    keep: usize,
    file_io: &FileIO,
) -> Result<usize> {
    let keep = keep.max(1);
    let metadata = &staged.metadata;
    if metadata.snapshots().count() <= keep + (keep / 4).max(1) {
        return Ok(0);
    }
    let ancestry = ancestry_of(metadata, staged.snapshot_id);
    if ancestry.len() <= keep {
        return Ok(0);
    }
    let cutoff = metadata
        .snapshot_by_id(ancestry[keep - 1])
        .map_or(i64::MIN, |s| s.timestamp_ms());
    let on_main: HashSet<i64> = ancestry.iter().copied().collect();
    let mut expired: HashSet<i64> = metadata
        .snapshots()
        .filter(|s| s.timestamp_ms() < cutoff && !ancestry[..keep].contains(&s.snapshot_id()))
        .map(|s| s.snapshot_id())
        .collect();
    // Keep what a kept snapshot off main descends from.
    let kept_off_main: Vec<i64> = metadata
        .snapshots()
        .map(|s| s.snapshot_id())
        .filter(|id| !expired.contains(id) && !on_main.contains(id))
        .collect();
    for id in kept_off_main {
        for ancestor in ancestry_of(metadata, id) {
            if !on_main.contains(&ancestor) {
                expired.remove(&ancestor);
            }
        }
    }
    if expired.is_empty() {
        return Ok(0);
    }
    // Ledger entries of expired main snapshots join the checkpoint (newest entry per path).
    let mut entries: HashMap<String, CheckpointEntry> = HashMap::new();
    let mut any_ledger = metadata.properties().contains_key(CHECKPOINT_KEY);
    for id in ancestry.iter().filter(|id| expired.contains(id)) {
        let Some(text) = metadata
            .snapshot_by_id(*id)
            .and_then(|s| s.summary().additional_properties.get(LOADED_FILES).cloned())
        else {
            continue;
        };
        any_ledger = true;
        if let Ok(files) = serde_json::from_str::<Vec<LoadedFile>>(&text) {
            for file in files {
                entries.entry(file.path.clone()).or_insert(CheckpointEntry {
                    file,
                    snapshot: *id,
                });
            }
        }
    }
    let mut properties = HashMap::new();
    if any_ledger {
        for old in ledger::read_checkpoint(metadata, file_io).await? {
            entries.entry(old.file.path.clone()).or_insert(old);
        }
        let mut all: Vec<CheckpointEntry> = entries.into_values().collect();
        all.sort_by(|a, b| a.file.path.cmp(&b.file.path));
        let path = ledger::write_checkpoint(metadata, file_io, &all).await?;
        properties.insert(CHECKPOINT_KEY.to_string(), path);
    }
    let ids: Vec<i64> = expired.iter().copied().collect();
    let mut builder = staged
        .metadata
        .clone()
        .into_builder(None)
        .remove_snapshots(&ids);
    if !properties.is_empty() {
        builder = builder.set_properties(properties)?;
    }
    staged.metadata = builder.build()?.metadata;
    tracing::info!(table = %staged.table, expired = ids.len(), "expired old snapshots");
    Ok(ids.len())
}

/// `id` and its ancestors present in the metadata, newest first.
fn ancestry_of(metadata: &TableMetadata, id: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut next = metadata.snapshot_by_id(id).cloned();
    while let Some(s) = next {
        out.push(s.snapshot_id());
        next = s
            .parent_snapshot_id()
            .and_then(|p| metadata.snapshot_by_id(p).cloned());
    }
    out
}
