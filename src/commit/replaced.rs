//! `replace` snapshots (compactions, manifest rewrites: Iceberg's operation for a change that
//! keeps every row) are stepped over wherever the engine asks "what changed since": a
//! compaction by `pipeline maintain` or by S3 Tables' own maintenance never makes a later run
//! recompute, conflict, or refuse a rollback.

use std::collections::HashMap;

use iceberg::io::FileIO;
use iceberg::spec::{DataFile, Operation, SnapshotRef, TableMetadata};

use super::diff::changed_files;
use crate::error::Result;

/// Whether every snapshot after `base` up to the current one of `metadata` is a `replace`
/// (true when the table is still at `base`). False when `base` is not an ancestor of the
/// current snapshot (or the history between them was expired).
pub fn only_replaced_since(metadata: &TableMetadata, base: Option<i64>) -> bool {
    match since(metadata, base, metadata.current_snapshot_id()) {
        Some(chain) => chain.iter().all(is_replace),
        None => false,
    }
}

/// The files through which rows changed between snapshot `from` and snapshot `to`: like
/// [`changed_files`], but `replace` snapshots between them are stepped over, so the answer
/// names the files writers added or removed, not the files a compaction merged them into.
/// `Ok(None)` when `from` is gone from the metadata (expired).
pub async fn data_changes(
    file_io: &FileIO,
    metadata: &TableMetadata,
    from: Option<i64>,
    to: Option<i64>,
) -> Result<Option<Vec<DataFile>>> {
    let chain = match since(metadata, from, to) {
        Some(chain) if chain.iter().any(is_replace) => chain,
        // No compaction in between, or `from` is not an ancestor of `to` (a rollback moved
        // the table back): the plain difference of the two snapshots.
        _ => return changed_files(file_io, metadata, from, to).await,
    };
    let mut files: HashMap<String, DataFile> = HashMap::new();
    for snapshot in chain.iter().filter(|s| !is_replace(s)) {
        let Some(changed) = changed_files(
            file_io,
            metadata,
            snapshot.parent_snapshot_id(),
            Some(snapshot.snapshot_id()),
        )
        .await?
        else {
            return Ok(None);
        };
        for file in changed {
            files.insert(file.file_path().to_string(), file);
        }
    }
    let mut out: Vec<DataFile> = files.into_values().collect();
    out.sort_by(|a, b| a.file_path().cmp(b.file_path()));
    Ok(Some(out))
}

fn is_replace(snapshot: &SnapshotRef) -> bool {
    snapshot.summary().operation == Operation::Replace
}

/// The snapshots after `from` up to `to` (newest first) when `from` is an ancestor of `to`
/// (`None` stands for the empty table before the first snapshot).
fn since(metadata: &TableMetadata, from: Option<i64>, to: Option<i64>) -> Option<Vec<SnapshotRef>> {
    let mut chain = Vec::new();
    let mut next = to;
    while next != from {
        let snapshot = metadata.snapshot_by_id(next?)?.clone();
        next = snapshot.parent_snapshot_id();
        chain.push(snapshot);
    }
    Some(chain)
}
