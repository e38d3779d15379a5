//! `pipeline erase PIPELINE --where "customer_id = 4711" --reason TEXT [--plan]`: the rows of
//! one subject removed from every table of the pipeline that holds the columns the condition
//! names, copy-on-write (see `row_change`), in one atomic publish recorded as a run of kind
//! `erase`. The receipt holds who, why, the tables, rows removed per table and files
//! rewritten; never the erased rows. `--plan` lists the same without changing anything.
//!
//! Not yet: quarantine tables (raw lines) are listed as not searched; tables whose subject
//! column was renamed by a transform are not followed through lineage; aggregates without
//! the subject's column (monthly totals) are recomputed by the next run, not in this publish;
//! old snapshots hold the rows until [`purge`] expires them.

use std::sync::Arc;
use std::time::Duration;

use datafusion::common::DFSchema;
use datafusion::prelude::SessionContext;
use iceberg::arrow::schema_to_arrow_schema;
use serde::Serialize;

use super::open::lock_and_recover;
use super::report::Observer;
use super::row_change::{stage_row_change, ParsedChange, RowEdit};
use crate::catalog::lock::LockWait;
use crate::catalog::{new_run_id, Invocation, PipelineCatalog, RunKind, RunRecord};
use crate::commit::publish::{publish, Publication, TableChange};
use crate::error::{Error, Result};
use crate::spec::{Pipeline, TableName};

/// One table in an erase, planned or done.
#[derive(Debug, Serialize)]
pub struct ErasedTable {
    pub table: String,
    pub rows: u64,
    pub files_rewritten: u64,
    pub files_in_table: u64,
    pub bytes_rewritten: u64,
}

/// What `pipeline erase` found (and, unless planned, did).
#[derive(Debug, Serialize)]
pub struct EraseReport {
    pub planned_only: bool,
    /// Tables holding the condition's columns, with what matched in each.
    pub tables: Vec<ErasedTable>,
    /// Tables the pipeline writes that lack a column the condition names.
    pub without_subject: Vec<String>,
    /// Tables not searched, with why.
    pub not_searched: Vec<String>,
    /// The published run; `None` when planned only or nothing matched.
    pub record: Option<RunRecord>,
}

/// Every column `condition` names is a column of `schema` (by name).
fn holds_columns(schema: &iceberg::spec::Schema, condition: &str) -> Result<bool> {
    let arrow_schema = schema_to_arrow_schema(schema)?;
    let df_schema = DFSchema::try_from(arrow_schema)?;
    // Planning the condition against the table's schema fails exactly when it names a column
    // the table does not have (or is not SQL at all: then no table holds it, said below).
    Ok(SessionContext::new()
        .parse_sql_expr(condition, &df_schema)
        .is_ok_and(|expr| {
            expr.column_refs()
                .iter()
                .all(|c| df_schema.has_column_with_unqualified_name(&c.name))
        }))
}

/// Erases the rows where `condition` is true from every table of `pipeline` that holds its
/// columns (or, with `plan_only`, says what that would do).
pub async fn erase(
    pipeline: &Pipeline,
    catalog: &PipelineCatalog,
    condition: &str,
    plan_only: bool,
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
) -> Result<EraseReport> {
    let _locked = lock_and_recover(
        catalog,
        &pipeline.name,
        LockWait(Some(Duration::from_secs(3600))),
        observer,
    )
    .await?;
    let started = chrono::Utc::now();
    let run_id = new_run_id(started);
    let mut report = EraseReport {
        planned_only: plan_only,
        tables: Vec::new(),
        without_subject: Vec::new(),
        not_searched: Vec::new(),
        record: None,
    };
    let written: Vec<TableName> = pipeline
        .ingests
        .iter()
        .map(|i| i.table.clone())
        .chain(pipeline.transforms.iter().map(|t| t.table.clone()))
        .collect();
    let mut changes = Vec::new();
    let mut entries = Vec::new();
    for table in &written {
        let Some(loaded) = catalog.load(table).await? else {
            continue;
        };
        if !holds_columns(loaded.metadata().current_schema(), condition)? {
            report.without_subject.push(table.to_string());
        } else {
            let change = ParsedChange {
                table: table.clone(),
                condition: condition.to_string(),
                edit: RowEdit::Delete,
            };
            let part =
                stage_row_change(catalog, &pipeline.name, &run_id, &change, plan_only).await?;
            report.tables.push(ErasedTable {
                table: table.to_string(),
                rows: part.rows,
                files_rewritten: part.files_rewritten,
                files_in_table: part.files_in_table,
                bytes_rewritten: part.bytes_rewritten,
            });
            if let Some((staged, entry)) = part.staged {
                changes.push(TableChange::publish(staged)?);
                entries.push(entry);
            }
        }
        let quarantine = table.quarantine();
        if catalog.load(&quarantine).await?.is_some() {
            report.not_searched.push(format!(
                "{quarantine}: quarantined raw lines are not searched yet"
            ));
        }
    }
    if report.tables.is_empty() {
        return Err(Error::Usage(format!(
            "--where {condition}: no table of {} has the columns it names (or it is not a SQL condition); its tables: {}",
            pipeline.name,
            report.without_subject.join(", ")
        )));
    }
    if plan_only || changes.is_empty() {
        return Ok(report);
    }
    let record = RunRecord::new(&run_id, RunKind::Erase, &pipeline.name, started, invocation)
        .finished_now()
        .with_tables(entries);
    publish(
        catalog,
        Publication {
            changes,
            record: Some(record.clone()),
        },
    )
    .await?;
    report.record = Some(record);
    Ok(report)
}

/// `--purge`: the erased `tables` keep only their current snapshot. Every older one (even
/// those kept for rollback and for incremental runs) expires, and the data files, manifests
/// and metadata files only they referenced are deleted: no file of the warehouse holds the
/// erased rows afterwards. Recorded as a `maintain` run; it cannot be undone.
pub async fn purge(
    pipeline: &Pipeline,
    tables: Vec<TableName>,
    invocation: Invocation,
) -> Result<super::MaintainReport> {
    let mut spec = pipeline.clone();
    spec.maintenance.expire_older_than = Duration::ZERO;
    spec.maintenance.keep_last = 1;
    spec.maintenance.min_input_files = usize::MAX; // no compaction
                                                   // First pass: manifests rewritten to hold live files only (the erase snapshot's manifests
                                                   // still list the removed files, with their column bounds), older snapshots expired.
    spec.maintenance.max_manifests = 0;
    let mut options = super::MaintainOptions::new(LockWait(Some(Duration::from_secs(3600))));
    options.tables = Some(tables);
    options.expire_protected = true;
    options.invocation = invocation;
    super::maintain_pipeline(&spec, &options, Arc::new(super::Silent)).await?;
    // Second pass: the erase snapshot itself, now older than the rewrite, expires too.
    spec.maintenance.max_manifests = usize::MAX;
    super::maintain_pipeline(&spec, &options, Arc::new(super::Silent)).await
}
