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
use iceberg::spec::{SnapshotRef, TableMetadata, TableProperties};

use super::ledger::{self, CheckpointEntry, LoadedFile, CHECKPOINT_KEY};
use super::staged::StagedTable;
use super::summary::LOADED_FILES;
use crate::error::Result;
use crate::spec::TableName;

/// Which snapshots may expire.
#[derive(Debug, Clone, Default)]
pub struct Expiry {
    /// The newest snapshots of `main`'s history always kept (at least 1: the current one).
    pub keep_last: usize,
    /// Only snapshots committed before this instant (milliseconds since the epoch) expire.
    pub before_ms: Option<i64>,
    /// Snapshots kept whatever their age (e.g. those a recent run record rolls back to).
    pub protect: HashSet<i64>,
    /// Retention's batching: nothing expires until a quarter more than `keep_last` piled up.
    pub batch: bool,
    /// What `keep_last`, `before_ms` and `protect` let expire waits (maintenance after a run
    /// batches its expiries, see [`window_backlog`]); `retain_at_most` still applies.
    pub hold_window: bool,
    /// `[retention] max_snapshots`, applied as at a run's publish on top of the rest: the
    /// snapshots it would expire expire too (a maintenance commit then keeps a table within
    /// the retention a run's commit keeps it in).
    pub retain_at_most: Option<usize>,
}

/// Expires the oldest snapshots of a staged table beyond `keep` (see the module doc).
/// Returns how many were expired.
pub async fn expire_snapshots(
    staged: &mut StagedTable,
    keep: usize,
    file_io: &FileIO,
) -> Result<usize> {
    let expiry = Expiry {
        keep_last: keep,
        before_ms: None,
        protect: HashSet::new(),
        batch: true,
        hold_window: false,
        retain_at_most: None,
    };
    Ok(expire_with(staged, &expiry, file_io).await?.len())
}

/// Expires the snapshots of a staged table that `expiry` allows (see [`expire_metadata`]).
/// Returns the snapshots expired.
pub async fn expire_with(
    staged: &mut StagedTable,
    expiry: &Expiry,
    file_io: &FileIO,
) -> Result<Vec<i64>> {
    let Some(expired) = expire_metadata(
        &staged.table,
        &staged.metadata,
        staged.snapshot_id,
        expiry,
        file_io,
    )
    .await?
    else {
        return Ok(Vec::new());
    };
    staged.metadata = expired.metadata;
    Ok(expired.snapshots.iter().map(|s| s.snapshot_id()).collect())
}

/// What an expiry removed from a table's metadata.
#[derive(Debug, Clone)]
pub struct Expired {
    /// The metadata without the expired snapshots.
    pub metadata: TableMetadata,
    /// The snapshots removed (their manifest lists name what only they may reference).
    pub snapshots: Vec<SnapshotRef>,
    /// The ledger checkpoint file the new metadata no longer names (a new one replaced it).
    pub old_checkpoint: Option<String>,
}

/// Expires the snapshots of `metadata` that `expiry` allows, `head` being the snapshot `main`
/// is (or will be) at. Never expired: `head` and the newest `keep_last` of its history, a
/// branch or tag head, a protected snapshot, and what a kept snapshot off `main` descends from.
/// The file ledger entries of expired `main` snapshots move into the checkpoint. `None` when
/// nothing expires. Nothing is deleted here.
pub async fn expire_metadata(
    table: &TableName,
    metadata: &TableMetadata,
    head: i64,
    expiry: &Expiry,
    file_io: &FileIO,
) -> Result<Option<Expired>> {
    let expired = expirable(metadata, head, expiry);
    if expired.is_empty() {
        return Ok(None);
    }
    let ancestry = ancestry_of(metadata, head);
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
    let mut old_checkpoint = None;
    if any_ledger {
        for old in ledger::read_checkpoint(metadata, file_io).await? {
            entries.entry(old.file.path.clone()).or_insert(old);
        }
        let mut all: Vec<CheckpointEntry> = entries.into_values().collect();
        all.sort_by(|a, b| a.file.path.cmp(&b.file.path));
        let path = ledger::write_checkpoint(metadata, file_io, &all).await?;
        old_checkpoint = metadata.properties().get(CHECKPOINT_KEY).cloned();
        properties.insert(CHECKPOINT_KEY.to_string(), path);
    }
    let snapshots: Vec<SnapshotRef> = metadata
        .snapshots()
        .filter(|s| expired.contains(&s.snapshot_id()))
        .cloned()
        .collect();
    let ids: Vec<i64> = snapshots.iter().map(|s| s.snapshot_id()).collect();
    let mut builder = metadata.clone().into_builder(None).remove_snapshots(&ids);
    if !properties.is_empty() {
        builder = builder.set_properties(properties)?;
    }
    let metadata = builder.build()?.metadata;
    tracing::info!(table = %table, expired = ids.len(), "expired old snapshots");
    Ok(Some(Expired {
        metadata,
        snapshots,
        old_checkpoint,
    }))
}

/// The snapshots of `metadata` that `expiry` lets expire, `main` being at `head` (see
/// [`expire_metadata`]). Reads nothing: what `pipeline maintain --plan` counts.
pub fn expirable(metadata: &TableMetadata, head: i64, expiry: &Expiry) -> HashSet<i64> {
    let mut expired = if expiry.hold_window {
        HashSet::new()
    } else {
        candidates(metadata, head, expiry)
    };
    if let Some(at_most) = expiry.retain_at_most {
        let retention = Expiry {
            keep_last: at_most,
            before_ms: None,
            protect: HashSet::new(),
            batch: true,
            hold_window: false,
            retain_at_most: None,
        };
        expired.extend(candidates(metadata, head, &retention));
    }
    keep_lineage_of_kept(metadata, head, expired)
}

/// How many snapshots of `metadata` have passed `expiry`'s window, and how many the table
/// would keep: what a batched expiry weighs (maintenance after a run expires once the
/// snapshots past the window are as many as those kept, and at least 2, which keeps a
/// history within twice what the window keeps while a nightly schedule commits an expiry,
/// and surveys the catalog to delete what it frees, once a week or so rather than nightly).
pub fn window_backlog(metadata: &TableMetadata, head: i64, expiry: &Expiry) -> (usize, usize) {
    let due = candidates(metadata, head, expiry).len();
    (due, metadata.snapshots().count() - due)
}

/// The snapshots `expiry` lets expire, before keeping what kept snapshots descend from.
fn candidates(metadata: &TableMetadata, head: i64, expiry: &Expiry) -> HashSet<i64> {
    let keep = expiry.keep_last.max(1);
    if expiry.batch && metadata.snapshots().count() <= keep + (keep / 4).max(1) {
        return HashSet::new();
    }
    let ancestry = ancestry_of(metadata, head);
    if ancestry.len() <= keep {
        return HashSet::new();
    }
    let cutoff = metadata
        .snapshot_by_id(ancestry[keep - 1])
        .map_or(i64::MIN, |s| s.timestamp_ms());
    let heads = ref_heads(metadata);
    metadata
        .snapshots()
        .filter(|s| {
            s.timestamp_ms() < cutoff
                && expiry.before_ms.is_none_or(|b| s.timestamp_ms() < b)
                && !ancestry[..keep].contains(&s.snapshot_id())
                && !expiry.protect.contains(&s.snapshot_id())
                && !heads.contains(&s.snapshot_id())
                && s.snapshot_id() != head
        })
        .map(|s| s.snapshot_id())
        .collect()
}

/// `expired` without what a kept snapshot off `main` descends from.
fn keep_lineage_of_kept(
    metadata: &TableMetadata,
    head: i64,
    mut expired: HashSet<i64>,
) -> HashSet<i64> {
    let on_main: HashSet<i64> = ancestry_of(metadata, head).into_iter().collect();
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
    expired
}

/// Metadata files `pipeline maintain` keeps in a table's metadata log (the newest ones); older
/// log entries are dropped and their files deleted once the change is published.
pub const METADATA_LOG_KEPT: usize = 10;

/// `metadata` with its metadata log cut to the newest [`METADATA_LOG_KEPT`] entries, and the
/// files of the entries cut (no snapshot reads them: they are earlier versions of the table's
/// metadata). Left as it is when the table sets `write.metadata.previous-versions-max` itself.
pub fn trim_metadata_log(metadata: TableMetadata) -> Result<(TableMetadata, Vec<String>)> {
    let key = TableProperties::PROPERTY_METADATA_PREVIOUS_VERSIONS_MAX;
    if metadata.properties().contains_key(key) || metadata.metadata_log().len() <= METADATA_LOG_KEPT
    {
        return Ok((metadata, Vec::new()));
    }
    let cut = metadata
        .into_builder(None)
        .set_properties(HashMap::from([(
            key.to_string(),
            METADATA_LOG_KEPT.to_string(),
        )]))?
        .build()?;
    let dropped = cut
        .expired_metadata_logs
        .iter()
        .map(|l| l.metadata_file.clone())
        .collect();
    let metadata = cut
        .metadata
        .into_builder(None)
        .remove_properties(&[key.to_string()])?
        .build()?
        .metadata;
    Ok((metadata, dropped))
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

/// The snapshots branches and tags point at (another engine may have made some). The refs map
/// is not public in iceberg 0.10, so it is read from the metadata's JSON form.
fn ref_heads(metadata: &TableMetadata) -> HashSet<i64> {
    let mut heads = HashSet::new();
    heads.extend(metadata.current_snapshot_id());
    if let Ok(value) = serde_json::to_value(metadata) {
        if let Some(refs) = value.get("refs").and_then(|r| r.as_object()) {
            heads.extend(
                refs.values()
                    .filter_map(|r| r.get("snapshot-id").and_then(|v| v.as_i64())),
            );
        }
    }
    heads
}
