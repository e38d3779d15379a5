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

use iceberg::spec::{DataFile, TableMetadata};

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

/// What a conflict message tells the user to do.
const RERUN: &str = "run it again to compute on top of that change";

/// Produces `staged` again on the table's current state in the catalog.
pub async fn rebase(catalog: &PipelineCatalog, staged: &StagedTable) -> Result<StagedTable> {
    let conflict = |message: String| conflict_on(staged, message);
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
    if metadata.current_schema().as_struct() != staged.metadata.current_schema().as_struct()
        || metadata.default_partition_spec().fields()
            != staged.metadata.default_partition_spec().fields()
    {
        return Err(conflict(format!(
            "another writer changed its schema or partitioning; {RERUN}"
        )));
    }
    let moved = Moved {
        staged,
        current: &current,
        metadata: &metadata,
        theirs: metadata.current_snapshot_id(),
    };
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
            if let Some(kept) = moved.compaction_left(removed, &mut files).await? {
                mode = WriteMode::Compact(kept);
            }
        }
        WriteMode::Overwrite => {
            return Err(conflict(format!(
                "another writer committed snapshot {} to it after this run read it, and a full \
                 refresh cannot be rebased; {RERUN}",
                moved.theirs.unwrap_or_default()
            )))
        }
        WriteMode::Append | WriteMode::Rewrite(_) => {
            moved.check_loaded_files(catalog).await?;
            if let WriteMode::Rewrite(removed) = &staged.mode {
                moved.check_rewritten_files(removed).await?;
            }
        }
        WriteMode::Replace(range) => moved.check_replaced_partitions(range).await?,
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

/// The conflict that stops the publish of `staged`.
fn conflict_on(staged: &StagedTable, message: String) -> Error {
    Error::Conflict {
        table: staged.table.to_string(),
        message,
    }
}

/// A table another writer moved after this run staged its snapshot.
struct Moved<'a> {
    /// What this run staged, on the older version.
    staged: &'a StagedTable,
    /// The table as the catalog has it now, and its metadata.
    current: &'a iceberg::table::Table,
    metadata: &'a TableMetadata,
    /// Its current snapshot (the other writer's).
    theirs: Option<i64>,
}

impl Moved<'_> {
    /// The conflict that stops the publish of this table.
    fn conflict(&self, message: String) -> Error {
        conflict_on(self.staged, message)
    }

    /// A compaction of the `removed` files on top of the other writer's change: partitions
    /// where it removed a file being compacted are taken out of `files`, and the files still to
    /// remove are returned (`None`: no partition was hit). A conflict when nothing is left.
    async fn compaction_left(
        &self,
        removed: &BTreeSet<String>,
        files: &mut Vec<DataFile>,
    ) -> Result<Option<BTreeSet<String>>> {
        let (current, metadata) = (self.current, self.metadata);
        let base = self.staged.metadata.current_snapshot_id();
        // Partitions where the other writer removed a file this compaction replaces are
        // left out (their new files stay unreferenced); the rest is compacted on top.
        let changed = changed_files(current.file_io(), metadata, base, self.theirs)
            .await?
            .ok_or_else(|| {
                self.conflict(format!("the snapshot it started from is gone; {RERUN}"))
            })?;
        let hit: Vec<iceberg::spec::Struct> = changed
            .iter()
            .filter(|f| removed.contains(f.file_path()))
            .map(|f| f.partition().clone())
            .collect();
        if hit.is_empty() {
            return Ok(None);
        }
        let at_base = changed_files(current.file_io(), metadata, None, base)
            .await?
            .unwrap_or_default();
        let kept: BTreeSet<String> = at_base
            .iter()
            .filter(|f| removed.contains(f.file_path()) && !hit.contains(f.partition()))
            .map(|f| f.file_path().to_string())
            .collect();
        files.retain(|f| !hit.contains(f.partition()));
        tracing::warn!(
            table = %self.staged.table,
            partitions = hit.len(),
            "another writer changed files being compacted; those partitions are skipped"
        );
        if files.is_empty() || kept.is_empty() {
            return Err(self.conflict(format!(
                "another writer changed every partition being compacted; {RERUN}"
            )));
        }
        Ok(Some(kept))
    }

    /// A conflict when the other writer loaded a source file this run loads (the ledger
    /// would count it twice).
    async fn check_loaded_files(&self, catalog: &PipelineCatalog) -> Result<()> {
        let staged = self.staged;
        // A source file this run loads must not have been loaded by the other writer.
        let ours: Vec<LoadedFile> = staged
            .properties
            .get(LOADED_FILES)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let before = loaded_files_with_checkpoint(&staged.metadata, catalog.file_io()).await?;
        let now = loaded_files_with_checkpoint(self.metadata, catalog.file_io()).await?;
        if let Some((f, by)) = ours.iter().find_map(|f| {
            let by = now.get(&f.path).map(|(_, by)| *by)?;
            (before.get(&f.path).map(|(_, b)| *b) != Some(by)).then_some((f, by))
        }) {
            return Err(self.conflict(format!(
                "another writer loaded {} into it concurrently (snapshot {by}); {RERUN}",
                f.path
            )));
        }
        Ok(())
    }

    /// A conflict when the other writer changed one of the `removed` data files this run
    /// rewrites (or the history between cannot be read).
    async fn check_rewritten_files(&self, removed: &BTreeSet<String>) -> Result<()> {
        let base = self.staged.metadata.current_snapshot_id();
        let changed =
            changed_files(self.current.file_io(), self.metadata, base, self.theirs).await?;
        if changed.is_none_or(|c| c.iter().any(|f| removed.contains(f.file_path()))) {
            return Err(self.conflict(format!(
                "another writer changed data files this run rewrites; {RERUN}"
            )));
        }
        Ok(())
    }

    /// A conflict naming the partitions of `range` whose rows the other writer changed.
    async fn check_replaced_partitions(&self, range: &PartitionRange) -> Result<()> {
        let base = self.staged.metadata.current_snapshot_id();
        let changed =
            data_changes(self.current.file_io(), self.metadata, base, self.theirs).await?;
        let Some(changed) = changed else {
            return Err(self.conflict(format!(
                "the snapshot this run started from is gone; {RERUN}"
            )));
        };
        let spec = self.metadata.default_partition_spec();
        let mut hit = PartitionRange::new(range.field.clone(), range.grain);
        for file in &changed {
            match range.unit_in(spec, file.partition()) {
                Ok(Some(unit)) if range.units.contains(&unit) => {
                    hit.units.insert(unit);
                }
                Ok(_) => {}
                Err(m) => return Err(self.conflict(format!("{m}; {RERUN}"))),
            }
        }
        if !hit.is_empty() {
            return Err(self.conflict(format!(
                "another writer changed partitions {hit} after this run read them; {RERUN}"
            )));
        }
        Ok(())
    }
}
