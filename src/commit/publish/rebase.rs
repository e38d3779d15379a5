//! Optimistic concurrency at publish: when another writer moved a table after this run staged
//! its snapshot, the snapshot is produced again on top of the new state, or the run fails with a
//! conflict that names the table (and the partitions) and publishes nothing.
//!
//! - **append**: always rebased (new files are added to whatever is there), unless the other
//!   writer loaded one of the same source files (the ledger would count it twice);
//! - **rewrite** (reloaded files): like an append, and the files it rewrites must be untouched;
//! - **replace**: rebased when the other writer changed no file in the replaced partitions;
//!   otherwise a conflict naming those partitions;
//! - **overwrite**: a conflict (the run computed the whole table from what it read).
//!
//! - **compaction** (`pipeline maintain`): rebased; partitions where the other writer removed a
//!   file being compacted are left out (reported), the rest commits;
//! - **manifest rewrite**: always produced again on the new state.
//!
//! `replace` snapshots by the other writer (compactions, S3 Tables' own maintenance) change no
//! row: an overwrite or replace is produced again on top of them, and the partitions a replace
//! compares are those whose rows changed (see `commit/replaced.rs`).
//!
//! A table's schema or partition spec changed by the other writer is always a conflict.

use std::collections::BTreeSet;

use crate::catalog::PipelineCatalog;
use crate::commit::diff::changed_files;
use crate::commit::ledger::{loaded_files_with_checkpoint, LoadedFile};
use crate::commit::produce::stage_snapshot;
use crate::commit::range::PartitionRange;
use crate::commit::replaced::{data_changes, only_replaced_since};
use crate::commit::staged::StagedTable;
use crate::commit::staged::WriteMode;
use crate::commit::summary::LOADED_FILES;
use crate::commit::target::TableTarget;
use crate::error::{Error, Result};

/// Produces `staged` again on the table's current state in the catalog.
pub async fn rebase(catalog: &PipelineCatalog, staged: &StagedTable) -> Result<StagedTable> {
    let conflict = |message: String| Error::Conflict {
        table: staged.table.to_string(),
        message,
    };
    if staged.base_location.is_none() {
        return Err(conflict(
            "another writer created it after this run started".into(),
        ));
    }
    let current = catalog
        .load(&staged.table)
        .await?
        .ok_or_else(|| conflict("another writer dropped it".into()))?;
    let metadata = current.metadata().clone();
    let theirs = metadata.current_snapshot_id();
    let rerun = "run it again to compute on top of that change";
    if metadata.current_schema().as_struct() != staged.metadata.current_schema().as_struct()
        || metadata.default_partition_spec().fields()
            != staged.metadata.default_partition_spec().fields()
    {
        return Err(conflict(format!(
            "another writer changed its schema or partitioning; {rerun}"
        )));
    }
    // Snapshots that only compacted files or rewrote manifests (S3 Tables' own maintenance,
    // `pipeline maintain`) change no row: anything can be produced again on top of them.
    let base = staged.metadata.current_snapshot_id();
    let data_unchanged = only_replaced_since(&metadata, base);
    let mut files = staged.files.clone();
    let mut mode = staged.mode.clone();
    match &staged.mode {
        WriteMode::Overwrite | WriteMode::Replace(_) if data_unchanged => {}
        WriteMode::RewriteManifests => {}
        WriteMode::Compact(removed) => {
            // Partitions where the other writer removed a file this compaction replaces are
            // left out (their new files stay unreferenced); the rest is compacted on top.
            let changed = changed_files(current.file_io(), &metadata, base, theirs)
                .await?
                .ok_or_else(|| {
                    conflict(format!("the snapshot it started from is gone; {rerun}"))
                })?;
            let hit: Vec<iceberg::spec::Struct> = changed
                .iter()
                .filter(|f| removed.contains(f.file_path()))
                .map(|f| f.partition().clone())
                .collect();
            if !hit.is_empty() {
                let at_base = changed_files(current.file_io(), &metadata, None, base)
                    .await?
                    .unwrap_or_default();
                let kept: BTreeSet<String> = at_base
                    .iter()
                    .filter(|f| removed.contains(f.file_path()) && !hit.contains(f.partition()))
                    .map(|f| f.file_path().to_string())
                    .collect();
                files.retain(|f| !hit.contains(f.partition()));
                tracing::warn!(
                    table = %staged.table,
                    partitions = hit.len(),
                    "another writer changed files being compacted; those partitions are skipped"
                );
                if files.is_empty() || kept.is_empty() {
                    return Err(conflict(format!(
                        "another writer changed every partition being compacted; {rerun}"
                    )));
                }
                mode = WriteMode::Compact(kept);
            }
        }
        WriteMode::Overwrite => {
            return Err(conflict(format!(
                "another writer committed snapshot {} to it after this run read it, and a full \
                 refresh cannot be rebased; {rerun}",
                theirs.unwrap_or_default()
            )))
        }
        WriteMode::Append | WriteMode::Rewrite(_) => {
            // A source file this run loads must not have been loaded by the other writer.
            let ours: Vec<LoadedFile> = staged
                .properties
                .get(LOADED_FILES)
                .and_then(|t| serde_json::from_str(t).ok())
                .unwrap_or_default();
            let before = loaded_files_with_checkpoint(&staged.metadata, catalog.file_io()).await?;
            let now = loaded_files_with_checkpoint(&metadata, catalog.file_io()).await?;
            if let Some((f, by)) = ours.iter().find_map(|f| {
                let by = now.get(&f.path).map(|(_, by)| *by)?;
                (before.get(&f.path).map(|(_, b)| *b) != Some(by)).then_some((f, by))
            }) {
                return Err(conflict(format!(
                    "another writer loaded {} into it concurrently (snapshot {by}); {rerun}",
                    f.path
                )));
            }
            if let WriteMode::Rewrite(removed) = &staged.mode {
                let base = staged.metadata.current_snapshot_id();
                let changed = changed_files(current.file_io(), &metadata, base, theirs).await?;
                if changed.is_none_or(|c| c.iter().any(|f| removed.contains(f.file_path()))) {
                    return Err(conflict(format!(
                        "another writer changed data files this run rewrites; {rerun}"
                    )));
                }
            }
        }
        WriteMode::Replace(range) => {
            let base = staged.metadata.current_snapshot_id();
            let changed = data_changes(current.file_io(), &metadata, base, theirs).await?;
            let Some(changed) = changed else {
                return Err(conflict(format!(
                    "the snapshot this run started from is gone; {rerun}"
                )));
            };
            let spec = metadata.default_partition_spec();
            let mut hit = PartitionRange::new(range.field.clone(), range.grain);
            for file in &changed {
                match range.unit_in(spec, file.partition()) {
                    Ok(Some(unit)) if range.units.contains(&unit) => {
                        hit.units.insert(unit);
                    }
                    Ok(_) => {}
                    Err(m) => return Err(conflict(format!("{m}; {rerun}"))),
                }
            }
            if !hit.is_empty() {
                return Err(conflict(format!(
                    "another writer changed partitions {hit} after this run read them; {rerun}"
                )));
            }
        }
    }
    let target = TableTarget::unchanged(
        &staged.table,
        &metadata,
        current.metadata_location_result()?,
    )?;
    stage_snapshot(
        target,
        files,
        catalog.file_io(),
        staged.properties.clone(),
        mode,
    )
    .await
}
