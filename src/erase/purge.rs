//! `pipeline erase --purge`: what makes an erase physical.

use std::sync::Arc;
use std::time::Duration;

use crate::catalog::PipelineCatalog;
use crate::error::Result;
use crate::maintain::{maintain_locked, MaintainOptions, MaintainReport};
use crate::operation::open::Held;
use crate::operation::Silent;
use crate::records::lock::LockWait;
use crate::records::Invocation;
use crate::spec::{Pipeline, TableName};

/// `--purge` of the erase `erase_run`: the erased `tables` keep only their current snapshot.
/// Every older one (even those kept for rollback and for incremental runs) expires, and the
/// data files, manifests and metadata files only they referenced are deleted: no file of the
/// warehouse holds the erased rows afterwards, nor does any file in the tables' folders that
/// nothing references (a killed run's data files, whatever their age; other files an hour old:
/// a younger one may be another writer's in flight, and is listed instead). The caller holds the run lock of
/// every pipeline of the project (`held`, the erase's), so no run comes in between. Recorded as `maintain` runs whose records name the
/// erase (`purge_of`) and what each table lost; it cannot be undone.
pub(crate) async fn purge(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    erase_run: &str,
    tables: Vec<TableName>,
    invocation: Invocation,
    held: &Held,
) -> Result<MaintainReport> {
    let mut spec = pipeline.clone();
    spec.maintenance.expire_older_than = Duration::ZERO;
    spec.maintenance.keep_last = 1;
    spec.maintenance.min_input_files = usize::MAX; // no compaction
    let mut options = MaintainOptions::new(LockWait(None));
    options.tables = Some(tables);
    options.expire_protected = true;
    options.invocation = invocation;
    options.purge_of = Some(erase_run.to_string());
    // Files nothing references (a killed run's) may hold the subject too: those a run of
    // this engine named go whatever their age, the others once an hour old; the rest are
    // listed (see `maintain_delete`).
    // First pass: manifests rewritten to hold live files only (the erase snapshot's manifests
    // still list the removed files, with their column bounds), older snapshots expired.
    spec.maintenance.max_manifests = 0;
    let silent = || Arc::new(Silent);
    let first = maintain_locked(catalog, &spec, &options, silent(), held).await?;
    // Second pass: the erase snapshot itself, now older than the rewrite, expires too.
    spec.maintenance.max_manifests = usize::MAX;
    let mut second = maintain_locked(catalog, &spec, &options, silent(), held).await?;
    // One report for both: what each table lost in all.
    for table in &mut second.tables {
        if let Some(before) = first.tables.iter().find(|t| t.table == table.table) {
            table.expired_snapshots += before.expired_snapshots;
            table.deleted_files += before.deleted_files;
            table.deleted_data_files += before.deleted_data_files;
            table.deleted_bytes += before.deleted_bytes;
            table.undeleted_files += before.undeleted_files;
            table.unreferenced_deleted += before.unreferenced_deleted;
            table.unreferenced_bytes += before.unreferenced_bytes;
            table.kept.extend(before.kept.iter().cloned());
            table.rewrite_manifests |= before.rewrite_manifests;
            table.snapshot_before = before.snapshot_before;
            table.note = table.note.take().or(before.note.clone());
        }
    }
    second.seconds += first.seconds;
    Ok(second)
}
