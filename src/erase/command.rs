//! `pipeline erase PIPELINE --where "customer_id = 4711" --reason TEXT`: one subject's rows
//! removed from every table of the pipeline that holds the subject (by name, by the spec's
//! `erase` keys, or by column lineage: see `plan::subject`), and from the quarantine tables
//! (an ingest's raw lines are read field by field as the ingest reads its files), copy-on-write
//! (see `rewrite_rows`). Tables computed from erased ones without holding the subject (monthly
//! totals) are recomputed in the same run, which publishes everything at once as a run of
//! kind `erase`, audited like any run. Its receipt holds who, why, the condition, per table
//! rows removed and files rewritten, and the landing files the rows came from; never the
//! erased rows.
//!
//! `--rewrite-sources` rewrites those landing files without the subject's records; their new
//! fingerprints go into the ingest table's file ledger in the same publish, so the next run
//! takes them as loaded (not as changed files to reload). The new files are written next to the
//! old ones first and moved over them once the publish succeeded. `--purge` then expires every
//! older snapshot of the erased tables and deletes the files only they referenced.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use arrow::array::RecordBatch;
use chrono::Utc;
use iceberg::arrow::schema_to_arrow_schema;
use serde::Serialize;

use super::purge::purge;
use super::raw::raw_lines;
use super::sources::RewrittenSources;
use super::subject::{recomputed_by_erase, subject_tables};
use crate::catalog::PipelineCatalog;
use crate::commit::ledger::LoadedFile;
use crate::commit::publish::Publication;
use crate::commit::JobContext;
use crate::dml::rewrite_rows::{compile_condition, true_rows, Edit, Rewrite, RewrittenTable};
use crate::erase::subject::condition_columns;
use crate::error::{Error, Result};
use crate::maintain::MaintainReport;
use crate::operation::{
    operate, Identity, Observer, Opened, Opening, RunStart, Scope, StagedTables, Staging,
    TableOperation, ToAudit,
};
use crate::plan::{validate, JobId, Validated};
use crate::records::lock::LockWait;
use crate::records::{
    new_run_id, EraseReceipt, ErasedSource, ErasedTable, Invocation, RunKind, RunRecord,
};
use crate::run::execute::{execute, Start};
use crate::run::RunOptions;
use crate::spec::{Pipeline, TableName};

/// What `pipeline erase` is asked to do.
#[derive(Debug, Clone)]
pub struct EraseRequest {
    /// The subject, as a SQL condition over its columns: `customer_id = 4711`.
    pub condition: String,
    /// Say what would be erased; change nothing.
    pub plan_only: bool,
    /// Rewrite the landing files without the subject's records.
    pub rewrite_sources: bool,
    /// Then expire every older snapshot of the erased tables and delete their files.
    pub purge: bool,
    /// Who asks and why (the reason is required by the command line).
    pub invocation: Invocation,
}

/// What `pipeline erase` found (and, unless planned, did).
#[derive(Debug, Serialize)]
pub struct EraseReport {
    pub planned_only: bool,
    /// The receipt (as recorded in the run record, when one was published).
    #[serde(flatten)]
    pub receipt: EraseReceipt,
    /// Tables the pipeline writes that do not hold the subject.
    pub without_subject: Vec<String>,
    /// The published run; `None` when planned only or nothing matched.
    pub record: Option<RunRecord>,
    /// What `--purge` did (printed beside the report, as `purge`).
    #[serde(skip)]
    pub purge: Option<MaintainReport>,
}

/// Erases the rows `request` names from every table of `pipeline` that holds the subject (or,
/// planned only, says what that would do). Takes the pipeline's run lock unless planned only
/// (every pipeline's of the project with `--purge`: it deletes files).
pub async fn erase(
    pipeline: &Pipeline,
    request: &EraseRequest,
    observer: Arc<dyn Observer>,
) -> Result<EraseReport> {
    if request.plan_only {
        let validated = validate(pipeline).await?;
        let run_id = new_run_id(Utc::now());
        return Ok(survey(pipeline, &validated, &run_id, request).await?.report);
    }
    operate(EraseOperation { pipeline, request }, observer).await
}

/// What the search of every table found, as the report says it, with what it staged.
struct Surveyed {
    report: EraseReport,
    found: Found,
    erased: Vec<TableName>,
    recomputed: Vec<JobId>,
}

/// Searches every table of `pipeline` for the subject (staging the rewrites for run `run_id`
/// unless planned only) and says which tables are recomputed from the erased ones.
async fn survey(
    pipeline: &Pipeline,
    validated: &Validated,
    run_id: &str,
    request: &EraseRequest,
) -> Result<Surveyed> {
    let clock = std::time::Instant::now();
    let mut found = find(pipeline, validated, run_id, request).await?;
    tracing::debug!(
        ms = clock.elapsed().as_millis() as u64,
        "erase: tables rewritten and staged"
    );
    let erased: Vec<TableName> = found
        .receipt
        .tables
        .iter()
        .filter(|t| t.rows > 0)
        .filter_map(|t| TableName::parse(&t.table))
        .collect();
    let recomputed = recomputed_by_erase(validated, &erased);
    found.receipt.recomputed = recomputed
        .iter()
        .map(|job| job_table(pipeline, *job).to_string())
        .collect();
    found.receipt.history = history(&validated.catalog, request);
    let report = EraseReport {
        planned_only: request.plan_only,
        receipt: std::mem::take(&mut found.receipt),
        without_subject: std::mem::take(&mut found.without_subject),
        record: None,
        purge: None,
    };
    Ok(Surveyed {
        report,
        found,
        erased,
        recomputed,
    })
}

/// An erase as the operation skeleton runs it: the subject's rows rewritten out, the tables
/// computed from them recomputed, all audited and published with the receipt in a record of
/// kind `erase`; then the landing files replaced and (`--purge`) older snapshots expired.
struct EraseOperation<'a> {
    pipeline: &'a Pipeline,
    request: &'a EraseRequest,
}

/// What an erase staged, and what it does once published.
struct EraseStaged {
    tables: StagedTables,
    dropped: HashMap<TableName, BTreeMap<String, u64>>,
    report: EraseReport,
    sources: RewrittenSources,
    erased: Vec<TableName>,
    run_id: String,
}

impl<'a> TableOperation<'a> for EraseOperation<'a> {
    type Staged = EraseStaged;
    type Output = EraseReport;

    fn opening(&self) -> Opening<'a> {
        // A purge deletes files: every pipeline of the project is held off meanwhile.
        let scope = match self.request.purge {
            true => Scope::Project,
            false => Scope::Pipeline,
        };
        Opening::Validated {
            pipeline: self.pipeline,
            scope,
        }
    }

    fn wait(&self) -> LockWait {
        LockWait(Some(Duration::from_secs(3600)))
    }

    fn identity(&self) -> Identity<'_> {
        Identity {
            kind: RunKind::Erase,
            pipeline: &self.pipeline.name,
            invocation: &self.request.invocation,
            run_id: None,
            started: None,
        }
    }

    async fn stage(
        &mut self,
        opened: &Opened<'a>,
        run: &RunStart,
        observer: &Arc<dyn Observer>,
    ) -> Result<Staging<EraseStaged, EraseReport>> {
        let (pipeline, request) = (self.pipeline, self.request);
        let validated = opened
            .validated
            .as_ref()
            .ok_or_else(|| Error::Internal("an erase without its validated pipeline".into()))?;
        let surveyed = survey(pipeline, validated, &run.run_id, request).await?;
        if surveyed.found.staged.is_empty() {
            return Ok(Staging::Done(surveyed.report));
        }
        let ctx = Arc::new(JobContext {
            catalog: validated.catalog.clone(),
            project_dir: pipeline.project_dir.clone(),
            pipeline: pipeline.name.clone(),
            run_id: run.run_id.clone(),
            started_at_micros: run.started.timestamp_micros(),
            reload_changed: false,
        });
        let mut options = RunOptions::new(LockWait(None));
        options.invocation = request.invocation.clone();
        options.run_id = Some(run.run_id.clone());
        let start = Start {
            staged: surveyed.found.staged,
            jobs: Some(surveyed.recomputed.into_iter().collect()),
        };
        let pipeline_arc = Arc::new(pipeline.clone());
        let executed = execute(
            ctx,
            pipeline_arc,
            validated,
            Arc::new(options),
            observer.clone(),
            start,
        )
        .await?;
        tracing::debug!("erase: downstream recomputed");
        Ok(Staging::Publish(EraseStaged {
            tables: StagedTables {
                tables: executed.staged,
                max_snapshots: pipeline.max_snapshots,
            },
            dropped: executed.dropped,
            report: surveyed.report,
            sources: surveyed.found.sources,
            erased: surveyed.erased,
            run_id: run.run_id.clone(),
        }))
    }

    fn to_audit<'s>(&self, staged: &'s EraseStaged) -> Option<ToAudit<'s>> {
        Some(ToAudit {
            tables: &staged.tables.tables,
            dropped: &staged.dropped,
        })
    }

    fn describe(&self, mut record: RunRecord, staged: &EraseStaged) -> RunRecord {
        record.erase = Some(staged.report.receipt.clone());
        record
    }

    async fn publication(
        &mut self,
        catalog: &PipelineCatalog,
        staged: &mut EraseStaged,
        record: RunRecord,
    ) -> Result<Option<Publication>> {
        Ok(Some(staged.tables.publication(catalog, record).await?))
    }

    async fn on_conflict(
        &mut self,
        catalog: &PipelineCatalog,
        staged: &mut EraseStaged,
        conflicts: &[usize],
        attempt: u32,
        observer: &Arc<dyn Observer>,
    ) -> Result<()> {
        staged
            .tables
            .rebase(catalog, conflicts, attempt, observer)
            .await
    }

    async fn finish(
        self,
        opened: Opened<'a>,
        staged: EraseStaged,
        _record: Option<RunRecord>,
        _observer: Arc<dyn Observer>,
    ) -> Result<EraseReport> {
        tracing::debug!("erase: published");
        let EraseStaged {
            mut report,
            sources,
            erased,
            run_id,
            ..
        } = staged;
        sources.commit()?;
        report.record = Some(opened.catalog.run(&run_id).await?);
        if self.request.purge {
            let mut invocation = self.request.invocation.clone();
            invocation.reason = Some(format!(
                "purge after erase {run_id}: {}",
                self.request.invocation.reason.as_deref().unwrap_or("")
            ));
            let held = opened
                .lock
                .as_ref()
                .ok_or_else(|| Error::Internal("a purge without its locks".into()))?;
            let catalog: &PipelineCatalog = &opened.catalog;
            let purged = purge(catalog, self.pipeline, &run_id, erased, invocation, held).await?;
            // What the purge left (a file another writer may have in flight) was not searched.
            let left = purged.tables.iter().flat_map(|t| &t.kept);
            let left = left.map(|k| format!("{}: {}", k.path, k.why));
            report.receipt.not_searched.extend(left);
            report.purge = Some(purged);
        }
        drop(opened);
        Ok(report)
    }
}

/// The table job `job` writes.
fn job_table(pipeline: &Pipeline, job: JobId) -> &TableName {
    match job {
        JobId::Ingest(i) => &pipeline.ingests[i].table,
        JobId::Transform(i) => &pipeline.transforms[i].table,
    }
}

/// What the receipt says of the older snapshots that still hold the rows.
fn history(catalog: &PipelineCatalog, request: &EraseRequest) -> String {
    match (request.purge, catalog.kind()) {
        (true, "s3tables") => format!(
            "purged: every older snapshot of the erased tables expired; S3 Tables deletes the files only they referenced itself (its unreferenced-file removal marks them noncurrent after unreferencedDays, 3 by default, and deletes them nonCurrentDays later, 10 by default): with the defaults, by {}",
            (Utc::now() + chrono::Duration::days(13)).format("%Y-%m-%d")
        ),
        (true, _) => "purged: every older snapshot of the erased tables expires and the files only they referenced are deleted by the maintain runs that follow this one under the same lock (their records name this erase; `pipeline run-info` of this run lists them)".to_string(),
        (false, _) => "older snapshots still hold the rows (for rollback) until they expire by the pipeline's [maintenance] settings; `pipeline erase --purge` removes them now".to_string(),
    }
}

/// What the search of every table found, and staged unless planned only.
struct Found {
    receipt: EraseReceipt,
    without_subject: Vec<String>,
    staged: Vec<crate::commit::StagedTable>,
    sources: RewrittenSources,
}

async fn find(
    pipeline: &Pipeline,
    validated: &Validated,
    run_id: &str,
    request: &EraseRequest,
) -> Result<Found> {
    let mut found = Found {
        receipt: EraseReceipt {
            condition: request.condition.clone(),
            ..EraseReceipt::default()
        },
        without_subject: Vec::new(),
        staged: Vec::new(),
        sources: RewrittenSources::default(),
    };
    // Tables are searched and rewritten in parallel, one per core at a time (each reads its
    // files one by one); their parts are kept in job order.
    let shared = Arc::new(pipeline.clone());
    let lanes = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut work = Vec::new();
    for subject in subject_tables(pipeline, validated, &request.condition)? {
        let Some(condition) = subject.condition else {
            found.without_subject.push(subject.table.to_string());
            continue;
        };
        let one = OneTable {
            catalog: validated.catalog.clone(),
            pipeline: shared.clone(),
            run_id: run_id.to_string(),
            table: subject.table,
            condition,
            rewrite_sources: request.rewrite_sources,
            plan_only: request.plan_only,
        };
        work.push(one);
    }
    let mut parts = futures::stream::iter(work)
        .map(|one| tokio::spawn(one.erase()))
        .buffered(lanes);
    while let Some(joined) = parts.next().await {
        let part = joined.map_err(|e| Error::Internal(format!("an erase task failed: {e}")))?;
        let mut part = part?;
        found.receipt.tables.append(&mut part.receipt.tables);
        found.receipt.sources.append(&mut part.receipt.sources);
        found
            .receipt
            .not_searched
            .append(&mut part.receipt.not_searched);
        found.staged.append(&mut part.staged);
        found
            .sources
            .pending
            .append(&mut std::mem::take(&mut part.sources.pending));
    }
    found
        .receipt
        .not_searched
        .extend(dropped_tables(&validated.catalog, pipeline).await?);
    if found.receipt.tables.is_empty() {
        return Err(Error::Usage(format!(
            "--where {}: no table of {} has the columns it names ({}); its tables: {}",
            request.condition,
            pipeline.name,
            condition_columns(&request.condition)?.join(", "),
            found.without_subject.join(", ")
        )));
    }
    Ok(found)
}

/// Tables of `pipeline` that a rollback dropped and the catalog does not list now: their files
/// are kept for that rollback's undo (see `commit::live`), and no erase searches them.
async fn dropped_tables(catalog: &PipelineCatalog, pipeline: &Pipeline) -> Result<Vec<String>> {
    let listed = catalog.list_tables().await?;
    let written = pipeline.tables_written();
    let mut out = Vec::new();
    for record in catalog.dropping_runs().await? {
        for t in &record.tables {
            let Some(table) = TableName::parse(&t.table) else {
                continue;
            };
            if t.dropped_metadata.is_some() && written.contains(&table) && !listed.contains(&table)
            {
                out.push(format!(
                    "{table}: dropped by rollback {}, its files are kept for that rollback's undo (`pipeline rollback {}`) and were not searched; `pipeline orphans --delete` removes them once a later run creates the table again",
                    record.run_id, record.run_id
                ));
            }
        }
    }
    out.dedup();
    Ok(out)
}

/// One table to erase the subject from (with its quarantine table), as a task of its own.
struct OneTable {
    catalog: Arc<PipelineCatalog>,
    pipeline: Arc<Pipeline>,
    run_id: String,
    table: TableName,
    /// The condition as it applies to this table.
    condition: String,
    rewrite_sources: bool,
    plan_only: bool,
}

impl OneTable {
    async fn erase(self) -> Result<Found> {
        let (catalog, pipeline) = (self.catalog.as_ref(), self.pipeline.as_ref());
        let (table, condition, run_id) =
            (&self.table, self.condition.as_str(), self.run_id.as_str());
        let plan_only = self.plan_only;
        let mut found = Found {
            receipt: EraseReceipt::default(),
            without_subject: Vec::new(),
            staged: Vec::new(),
            sources: RewrittenSources::default(),
        };
        if catalog.load(table).await?.is_none() {
            return Ok(found); // not created yet
        }
        let ingest = pipeline.ingests.iter().find(|i| &i.table == table);
        let mut lines: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
        let quarantine = table.quarantine();
        if catalog.load(&quarantine).await?.is_some() {
            let part = match ingest {
                Some(job) => {
                    let (part, unread) =
                        raw_lines(catalog, pipeline, job, run_id, condition, plan_only).await?;
                    found.receipt.not_searched.extend(unread);
                    part
                }
                None => {
                    rows(
                        catalog,
                        pipeline,
                        run_id,
                        &quarantine,
                        condition,
                        plan_only,
                        Vec::new(),
                    )
                    .await?
                }
            };
            merge(&mut lines, keep(&mut found, &quarantine, condition, part));
        }
        let mut ledger = Vec::new();
        if let (Some(job), true, false) = (ingest, self.rewrite_sources, plan_only) {
            // The bronze rows' lines first (a planning pass), so that the rewritten files'
            // fingerprints go into the same snapshot as the rows' removal.
            let planned = rows(
                catalog,
                pipeline,
                run_id,
                table,
                condition,
                true,
                Vec::new(),
            )
            .await?;
            merge(&mut lines, planned.sources);
            for (path, numbers) in &lines {
                ledger.push(
                    found
                        .sources
                        .rewrite(pipeline, job, path, numbers, run_id)?,
                );
            }
        }
        let part = rows(
            catalog, pipeline, run_id, table, condition, plan_only, ledger,
        )
        .await?;
        merge(&mut lines, keep(&mut found, table, condition, part));
        if ingest.is_some() {
            for (path, numbers) in lines {
                found.receipt.sources.push(ErasedSource {
                    path,
                    records: numbers.len() as u64,
                    rewritten: self.rewrite_sources && !plan_only,
                });
            }
        }
        Ok(found)
    }
}

/// Puts one table's part into the receipt (and its snapshot among the staged); returns the
/// landing files its rows came from.
fn keep(
    found: &mut Found,
    table: &TableName,
    condition: &str,
    part: RewrittenTable,
) -> BTreeMap<String, BTreeSet<u64>> {
    found.receipt.tables.push(ErasedTable {
        table: table.to_string(),
        condition: condition.to_string(),
        rows: part.rows,
        files_rewritten: part.files_rewritten,
        files_in_table: part.files_in_table,
        bytes_rewritten: part.bytes_rewritten,
        partitions: part.partitions.iter().cloned().collect(),
    });
    if let Some((staged, _)) = part.staged {
        found.staged.push(staged);
    }
    part.sources
}

fn merge(into: &mut BTreeMap<String, BTreeSet<u64>>, from: BTreeMap<String, BTreeSet<u64>>) {
    for (path, lines) in from {
        into.entry(path).or_default().extend(lines);
    }
}

/// The rows of `table` where `condition` (SQL over its columns) is true, removed.
async fn rows(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    run_id: &str,
    table: &TableName,
    condition: &str,
    plan_only: bool,
    ledger: Vec<LoadedFile>,
) -> Result<RewrittenTable> {
    let loaded = catalog.load_existing(table).await?;
    let schema = schema_to_arrow_schema(loaded.metadata().current_schema())?;
    let (columns, expr, physical) = compile_condition(&schema, condition)
        .map_err(|e| Error::table_msg(table, e.to_string()))?;
    let mut matcher = |batch: &RecordBatch| true_rows(physical.as_ref(), batch, condition);
    Rewrite {
        catalog,
        pipeline: &pipeline.name,
        run_id,
        table,
        prune: Some(expr),
        columns,
        edit: Edit::Delete,
        job: "erase",
        plan_only,
        ledger,
    }
    .stage(&mut matcher)
    .await
}
