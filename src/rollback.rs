//! `pipeline rollback RUN`: every table the run changed goes back to the snapshot it had
//! before the run, in one catalog transaction. A table the run created is dropped from the
//! embedded catalog (its files stay, and the rollback's record keeps its last metadata file)
//! or emptied on a remote one; the rollback says so, naming each, before it publishes, and
//! `--plan` shows it without changing anything. Every rollback is itself undoable: rolling it
//! back moves each table forward again, registering a dropped table back from its last
//! metadata while its files exist. Refused, with nothing changed, when any of those tables
//! moved after the run.

use std::sync::Arc;

use futures::StreamExt;
use iceberg::spec::{SnapshotReference, SnapshotRetention, TableMetadata, MAIN_BRANCH};
use serde::Serialize;

use crate::catalog::PipelineCatalog;
use crate::commit::publish::{Publication, TableChange};
use crate::commit::summary::total_records;
use crate::commit::{only_replaced_since, referenced};
use crate::error::{Error, Result};
use crate::operation::{
    operate, Identity, Observer, Opened, Opening, RunStart, Staging, TableOperation,
};
use crate::records::{Invocation, RunKind, RunRecord, TableRecord};
use crate::spec::TableName;

/// One table's move in a rollback.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Reversal {
    pub table: String,
    /// `rollback` (main moves back), `drop` (the run created it: the embedded catalog drops
    /// it), `empty` (the same on a remote catalog: main removed), `restore` (undo of a drop:
    /// registered back from its last metadata) or `refill` (undo of an empty).
    pub action: String,
    /// `main` now, and after the rollback (`None`: no table, or no snapshot on main).
    #[serde(with = "crate::id_text::option", default)]
    pub from: Option<i64>,
    #[serde(with = "crate::id_text::option", default)]
    pub to: Option<i64>,
    /// Rows after the rollback.
    pub rows: u64,
}

/// What a rollback does (or, with `plan_only`, would do).
#[derive(Debug, Clone, Serialize)]
pub struct RollbackReport {
    /// The run rolled back.
    pub rolls_back: String,
    pub planned_only: bool,
    pub tables: Vec<Reversal>,
    /// The record of the rollback; `None` when planned only.
    pub record: Option<RunRecord>,
}

impl RollbackReport {
    /// The tables the rollback drops or empties (the run created them).
    pub fn dropped(&self) -> Vec<&str> {
        self.tables
            .iter()
            .filter(|t| t.action == "drop" || t.action == "empty")
            .map(|t| t.table.as_str())
            .collect()
    }
}

/// Undoes run `run_id` atomically (or, with `plan_only`, says how, changing nothing) and
/// returns what it did, with the record of the rollback (itself undoable). Like a run, it
/// first takes its pipeline's run lock (waiting up to an hour for a run in progress) and
/// resolves a publish an earlier command left half done, telling `observer`; tables it drops
/// are named to `observer` before anything is published.
pub async fn rollback(
    catalog: &PipelineCatalog,
    run_id: &str,
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
    plan_only: bool,
) -> Result<RollbackReport> {
    let run = catalog.run(run_id).await?;
    if run.is_noop() && run.kind == RunKind::Maintain {
        return Err(Error::Usage(format!(
            "maintenance {run_id} only expired snapshots (and deleted the files only they referenced): that cannot be undone"
        )));
    }
    if let Some(env) = &run.env {
        return Err(Error::Usage(format!(
            "run {run_id} wrote to environment `{env}` (the tables' branch `{env}`), not to main: there is nothing on main to undo"
        )));
    }
    if let Some(error) = &run.error {
        return Err(Error::Usage(format!(
            "run {run_id} failed and changed no table ({error}): there is nothing to undo"
        )));
    }
    if run.is_noop() {
        return Err(Error::Usage(format!(
            "run {run_id} changed no table (it had nothing to do): there is nothing to undo"
        )));
    }
    if plan_only {
        let reversed = reverse(catalog, &run).await?;
        return Ok(RollbackReport {
            rolls_back: run_id.to_string(),
            planned_only: true,
            tables: reversed.reversals,
            record: None,
        });
    }
    let operation = RollbackOperation {
        catalog,
        run: &run,
        invocation,
    };
    operate(operation, observer).await
}

/// The changes that undo a run, the records of each and what the report says of each.
struct Reversed {
    changes: Vec<TableChange>,
    records: Vec<TableRecord>,
    reversals: Vec<Reversal>,
}

/// How every table `run` changed goes back to where the run found it.
async fn reverse(catalog: &PipelineCatalog, run: &RunRecord) -> Result<Reversed> {
    let mut reversed = Reversed {
        changes: Vec::new(),
        records: Vec::new(),
        reversals: Vec::new(),
    };
    for t in &run.tables {
        if t.snapshot_before == t.snapshot_after {
            // Expired snapshots only: there is nothing to move back.
            continue;
        }
        let name = TableName::parse(&t.table)
            .ok_or_else(|| Error::Usage(format!("run record names a bad table `{}`", t.table)))?;
        let (change, record) = match t.snapshot_after {
            Some(_) => move_back(catalog, run, t, &name).await?,
            None => undo_drop(catalog, run, t, &name).await?,
        };
        reversed.reversals.push(Reversal {
            table: t.table.clone(),
            action: record.operation.clone(),
            from: record.snapshot_before,
            to: record.snapshot_after,
            rows: record.rows,
        });
        reversed.records.push(record);
        reversed.changes.push(change);
    }
    Ok(reversed)
}

/// A rollback as the operation skeleton runs it: under the pipeline's run lock (waiting up
/// to an hour for a run in progress), every table moved back in one commit with a record of
/// kind `rollback`. A table another writer moved meanwhile fails it: nothing is rebased.
struct RollbackOperation<'a> {
    catalog: &'a PipelineCatalog,
    run: &'a RunRecord,
    invocation: &'a Invocation,
}

impl<'a> TableOperation<'a> for RollbackOperation<'a> {
    type Staged = Reversed;
    type Output = RollbackReport;

    fn opening(&self) -> Opening<'a> {
        Opening::Pipeline {
            catalog: self.catalog,
            pipeline: &self.run.pipeline,
        }
    }

    fn identity(&self) -> Identity<'_> {
        Identity::new(RunKind::Rollback, &self.run.pipeline, self.invocation)
    }

    async fn stage(
        &mut self,
        opened: &Opened<'a>,
        _run: &RunStart,
        observer: &Arc<dyn Observer>,
    ) -> Result<Staging<Reversed, RollbackReport>> {
        let reversed = reverse(&opened.catalog, self.run).await?;
        let dropped: Vec<&str> = reversed
            .reversals
            .iter()
            .filter(|t| t.action == "drop" || t.action == "empty")
            .map(|t| t.table.as_str())
            .collect();
        if !dropped.is_empty() {
            let (it, them) = match dropped.len() {
                1 => ("it", "it"),
                _ => ("them", "them"),
            };
            observer.warning(&format!(
                "run {} created {}: the rollback drops {it} (the files stay; rolling back this rollback registers {them} back)",
                self.run.run_id,
                dropped.join(", "),
            ));
        }
        Ok(Staging::Publish(reversed))
    }

    fn describe(&self, record: RunRecord, _staged: &Reversed) -> RunRecord {
        record.rolling_back(&self.run.run_id)
    }

    async fn publication(
        &mut self,
        _catalog: &PipelineCatalog,
        staged: &mut Reversed,
        record: RunRecord,
    ) -> Result<Option<Publication>> {
        Ok(Some(Publication {
            changes: std::mem::take(&mut staged.changes),
            record: Some(record.with_tables(staged.records.clone())),
        }))
    }

    async fn finish(
        self,
        _opened: Opened<'a>,
        staged: Reversed,
        record: Option<RunRecord>,
        _observer: Arc<dyn Observer>,
    ) -> Result<RollbackReport> {
        Ok(RollbackReport {
            rolls_back: self.run.run_id.clone(),
            planned_only: false,
            tables: staged.reversals,
            record,
        })
    }
}

/// The change that moves `t`'s table back to where `run` found it: to its snapshot before
/// the run, or (the run created it) dropped / emptied.
async fn move_back(
    catalog: &PipelineCatalog,
    run: &RunRecord,
    t: &TableRecord,
    name: &TableName,
) -> Result<(TableChange, TableRecord)> {
    let run_id = &run.run_id;
    let current = catalog.load(name).await?;
    let current_snapshot = current
        .as_ref()
        .and_then(|c| c.metadata().current_snapshot_id());
    // Only compactions and manifest rewrites since the run (S3 Tables' own maintenance,
    // `pipeline maintain`): the rows are the run's, and going back is still right.
    let Some(current) = current.filter(|c| {
        current_snapshot == t.snapshot_after || only_replaced_since(c.metadata(), t.snapshot_after)
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
    let (metadata, operation, rows, dropped_metadata) = match t.snapshot_before {
        Some(before) => {
            if current.metadata().snapshot_by_id(before).is_none() {
                return Err(expired(catalog, name, run, before).await);
            }
            let metadata = with_main(current.metadata(), &location, before)?;
            let rows = total_records(metadata.current_snapshot());
            (Some(metadata), "rollback", rows, None)
        }
        // The embedded catalog drops a table the run created (keeping where its metadata is,
        // for the undo); remote catalogs, where the table existed (empty) before the run's
        // publish, empty it.
        None if catalog.local_warehouse().is_some() => (None, "drop", 0, Some(location.clone())),
        None => (None, "empty", 0, None),
    };
    Ok((
        TableChange {
            table: name.clone(),
            expected_location: Some(location),
            metadata,
        },
        TableRecord {
            table: t.table.clone(),
            operation: operation.into(),
            partitions: None,
            snapshot_before: current_snapshot,
            snapshot_after: t.snapshot_before,
            rows,
            expired: None,
            dropped_metadata,
        },
    ))
}

/// The change that registers `t`'s table back from the metadata file the rollback that
/// dropped it recorded, with `main` at `to`; refused when that file or a data file it needs is
/// gone.
async fn register_back(
    catalog: &PipelineCatalog,
    run: &RunRecord,
    t: &TableRecord,
    name: &TableName,
    to: i64,
) -> Result<TableChange> {
    let Some(location) = &t.dropped_metadata else {
        return Err(Error::Usage(format!(
            "run {} dropped {} before rollbacks recorded where a dropped table's metadata is; it cannot be registered back by this command",
            run.run_id, t.table
        )));
    };
    let metadata = TableMetadata::read_from(catalog.file_io(), location)
        .await
        .map_err(|e| {
            Error::table_msg(
                name,
                format!(
                    "cannot be registered back: its last metadata file {location} cannot be read ({e}); its files were deleted"
                ),
            )
        })?;
    missing_files(catalog, name, &metadata, location).await?;
    Ok(TableChange {
        table: name.clone(),
        expected_location: None,
        metadata: Some(with_main(&metadata, location, to)?),
    })
}

/// The change that undoes a rollback's drop (registers the table back from the metadata file
/// the rollback recorded) or empty (moves `main` back to the snapshot it had).
async fn undo_drop(
    catalog: &PipelineCatalog,
    run: &RunRecord,
    t: &TableRecord,
    name: &TableName,
) -> Result<(TableChange, TableRecord)> {
    let run_id = &run.run_id;
    let Some(to) = t.snapshot_before else {
        return Err(Error::Internal(format!(
            "run {run_id} records {} with no snapshot before or after",
            t.table
        )));
    };
    let current = catalog.load(name).await?;
    let (change, operation) = match (t.operation.as_str(), current) {
        ("drop", Some(_)) => {
            return Err(Error::Conflict {
                table: t.table.clone(),
                message: format!(
                    "run {run_id} dropped it, and a table of that name exists again; roll back the run that created it first (`pipeline runs` lists it)"
                ),
            })
        }
        ("drop", None) => (register_back(catalog, run, t, name, to).await?, "restore"),
        (_, Some(current)) if current.metadata().current_snapshot_id().is_none() => {
            let location = current.metadata_location_result()?.to_string();
            if current.metadata().snapshot_by_id(to).is_none() {
                return Err(expired(catalog, name, run, to).await);
            }
            (
                TableChange {
                    table: name.clone(),
                    metadata: Some(with_main(current.metadata(), &location, to)?),
                    expected_location: Some(location),
                },
                "refill",
            )
        }
        (_, current) => {
            return Err(Error::Conflict {
                table: t.table.clone(),
                message: format!(
                    "run {run_id} emptied it, and it is now at {}; roll back the later runs first (`pipeline runs` lists them)",
                    show(current.and_then(|c| c.metadata().current_snapshot_id()))
                ),
            })
        }
    };
    let rows = change
        .metadata
        .as_ref()
        .map_or(0, |m| total_records(m.current_snapshot()));
    Ok((
        change,
        TableRecord {
            table: t.table.clone(),
            operation: operation.into(),
            partitions: None,
            snapshot_before: None,
            snapshot_after: Some(to),
            rows,
            expired: None,
            dropped_metadata: None,
        },
    ))
}

/// Refuses to register `table` back from `metadata` (read from `location`) when a file it
/// needs is gone: a table registered without its files would be damaged.
async fn missing_files(
    catalog: &PipelineCatalog,
    table: &TableName,
    metadata: &TableMetadata,
    location: &str,
) -> Result<()> {
    let needed = referenced(catalog.file_io(), metadata, location)
        .await
        .map_err(|e| {
            Error::table_msg(
                table,
                format!("cannot be registered back: the files its last metadata names cannot be read ({e})"),
            )
        })?;
    let file_io = catalog.file_io();
    let missing: Vec<String> = futures::stream::iter(needed)
        .map(|path| async move { (!file_io.exists(&path).await.unwrap_or(false)).then_some(path) })
        .buffer_unordered(16)
        .filter_map(|p| async move { p })
        .collect()
        .await;
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::table_msg(
        table,
        format!(
            "cannot be registered back: {} file(s) it needs are gone, e.g. {}",
            missing.len(),
            missing
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// `metadata` (read from `location`) with `main` at `snapshot`.
fn with_main(metadata: &TableMetadata, location: &str, snapshot: i64) -> Result<TableMetadata> {
    Ok(metadata
        .clone()
        .into_builder(Some(location.to_string()))
        .set_ref(
            MAIN_BRANCH,
            SnapshotReference::new(snapshot, SnapshotRetention::branch(None, None, None)),
        )?
        .build()?
        .metadata)
}

/// The refusal for a snapshot that is no longer in the table: which command expired it.
async fn expired(
    catalog: &PipelineCatalog,
    table: &TableName,
    run: &RunRecord,
    snapshot: i64,
) -> Error {
    let by = match catalog.runs().await {
        // Records come oldest first (by when they finished): run ids sort by their start
        // second only, so two runs of one second do not say which came first.
        Ok(runs) => runs
            .into_iter()
            .skip_while(|r| r.run_id != run.run_id)
            .skip(1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .find(|r| {
                r.kind == RunKind::Maintain
                    && r.tables
                        .iter()
                        .any(|t| t.table == table.to_string() && t.expired.is_some())
            })
            .map(|r| match &r.purge_of {
                Some(erase) => format!("the purge ({}) of erase {erase}", r.run_id),
                None => format!("maintenance {}", r.run_id),
            }),
        Err(_) => None,
    };
    let by = by.unwrap_or_else(|| "the spec's [retention] max_snapshots".into());
    Error::table_msg(
        table,
        format!(
            "cannot roll back run {}: snapshot {snapshot}, where it found the table, was expired by {by}",
            run.run_id
        ),
    )
}

fn show(snapshot: Option<i64>) -> String {
    snapshot.map_or_else(|| "(no table)".into(), |s| s.to_string())
}
