//! `pipeline rollback RUN`: every table the run changed goes back to the snapshot it had
//! before the run, in one catalog transaction (tables the run created are dropped from the
//! catalog). Refused, with nothing changed, when any of those tables moved after the run.

use std::sync::Arc;
use std::time::Duration;

use iceberg::spec::{SnapshotReference, SnapshotRetention, MAIN_BRANCH};

use super::open::lock_and_recover;
use super::report::Observer;
use crate::catalog::lock::LockWait;
use crate::catalog::{new_run_id, Invocation, PipelineCatalog, RunKind, RunRecord, TableRecord};
use crate::commit::only_replaced_since;
use crate::commit::publish::{publish, Publication, TableChange};
use crate::commit::summary::total_records;
use crate::error::{Error, Result};
use crate::spec::TableName;

/// Undoes run `run_id` atomically and returns the record of the rollback (itself undoable).
/// Like a run, it first takes its pipeline's run lock (waiting up to an hour for a run in
/// progress) and resolves a publish an earlier command left half done, telling `observer`.
pub async fn rollback(
    catalog: &PipelineCatalog,
    run_id: &str,
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
) -> Result<RunRecord> {
    let run = catalog.run(run_id).await?;
    if run.is_noop() && run.kind == RunKind::Maintain {
        return Err(Error::Usage(format!(
            "maintenance {run_id} only expired snapshots (and deleted the files only they referenced): that cannot be undone"
        )));
    }
    if run.is_noop() {
        return Err(Error::Usage(format!(
            "run {run_id} changed no table (it had nothing to do): there is nothing to undo"
        )));
    }
    let wait = LockWait(Some(Duration::from_secs(3600)));
    let _locked = lock_and_recover(catalog, &run.pipeline, wait, observer).await?;
    let started = chrono::Utc::now();
    let mut publication = Publication::default();
    let mut tables = Vec::new();
    for t in &run.tables {
        if t.snapshot_before == t.snapshot_after {
            // Expired snapshots only: there is nothing to move back.
            continue;
        }
        let name = TableName::parse(&t.table)
            .ok_or_else(|| Error::Usage(format!("run record names a bad table `{}`", t.table)))?;
        if t.snapshot_after.is_none() {
            return Err(Error::Usage(format!(
                "run {run_id} dropped {}; undoing a drop is not supported",
                t.table
            )));
        }
        let current = catalog.load(&name).await?;
        let current_snapshot = current
            .as_ref()
            .and_then(|c| c.metadata().current_snapshot_id());
        // Only compactions and manifest rewrites since the run (S3 Tables' own maintenance,
        // `pipeline maintain`): the rows are the run's, and going back is still right.
        let Some(current) = current.filter(|c| {
            current_snapshot == t.snapshot_after
                || only_replaced_since(c.metadata(), t.snapshot_after)
        }) else {
            return Err(Error::Conflict {
                table: t.table.clone(),
                message: format!(
                    "run {run_id} left it at snapshot {}, it is now at {}; roll back the later runs first (`pipeline runs` lists them)",
                    show(t.snapshot_after),
                    show(current_snapshot)
                ),
            });
        };
        let location = current.metadata_location_result()?.to_string();
        let (metadata, operation, rows) = match t.snapshot_before {
            Some(before) => {
                if current.metadata().snapshot_by_id(before).is_none() {
                    return Err(Error::table_msg(
                        &name,
                        format!(
                            "cannot roll back run {run_id}: snapshot {before}, where it found the table, was expired by the spec's [retention] max_snapshots"
                        ),
                    ));
                }
                let metadata = current
                    .metadata()
                    .clone()
                    .into_builder(Some(location.clone()))
                    .set_ref(
                        MAIN_BRANCH,
                        SnapshotReference::new(before, SnapshotRetention::branch(None, None, None)),
                    )?
                    .build()?
                    .metadata;
                let rows = total_records(metadata.current_snapshot());
                (Some(metadata), "rollback", rows)
            }
            // The embedded catalog drops a table the run created; remote catalogs, where the
            // table existed (empty) before the run's publish, empty it.
            None if catalog.local_warehouse().is_some() => (None, "drop", 0),
            None => (None, "empty", 0),
        };
        tables.push(TableRecord {
            table: t.table.clone(),
            operation: operation.into(),
            partitions: None,
            snapshot_before: t.snapshot_after,
            snapshot_after: t.snapshot_before,
            rows,
            expired: None,
        });
        publication.changes.push(TableChange {
            table: name,
            expected_location: Some(location),
            metadata,
        });
    }
    let new_id = new_run_id(started);
    let record = RunRecord::new(
        &new_id,
        RunKind::Rollback,
        &run.pipeline,
        started,
        invocation,
    )
    .rolling_back(run_id)
    .finished_now()
    .with_tables(tables);
    publication.record = Some(record.clone());
    publish(catalog, publication).await?;
    Ok(record)
}

fn show(snapshot: Option<i64>) -> String {
    snapshot.map_or_else(|| "(no table)".into(), |s| s.to_string())
}
