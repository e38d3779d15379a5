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

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;

use super::purge::purge;
use super::request::EraseRequest;
use super::search::{find, Found};
use super::sources::RewrittenSources;
use super::subject::recomputed_by_erase;
use crate::catalog::PipelineCatalog;
use crate::commit::JobContext;
use crate::error::{Error, Result};
use crate::maintain::MaintainReport;
use crate::operation::{
    operate, Identity, Observer, Opened, Opening, RunStart, Scope, StagedTables, Staging,
    TableOperation, ToAudit,
};
use crate::plan::{validate, JobId, Validated};
use crate::records::lock::LockWait;
use crate::records::{new_run_id, EraseReceipt, RunKind, RunRecord};
use crate::run::execute::{execute, Start};
use crate::run::RunOptions;
use crate::spec::{Pipeline, TableName};

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
        let run_id = new_run_id(crate::fault::wall_now());
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
    let envs = crate::env::list_envs(&validated.catalog, pipeline).await?;
    let envs: Vec<&str> = envs.iter().map(|e| e.env.as_str()).collect();
    found.receipt.history = history(&validated.catalog, request, &envs, &pipeline.name);
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

    fn identity(&self) -> Identity<'_> {
        Identity::new(
            RunKind::Erase,
            &self.pipeline.name,
            &self.request.invocation,
        )
    }

    async fn stage(
        &mut self,
        opened: &Opened<'a>,
        run: &RunStart,
        observer: &Arc<dyn Observer>,
    ) -> Result<Staging<EraseStaged, EraseReport>> {
        let (pipeline, request) = (self.pipeline, self.request);
        let validated = opened.validated("an erase")?;
        if request.purge {
            refuse_environments(&validated.catalog, pipeline).await?;
        }
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
            audit_early: false,
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
        }))
    }

    fn to_audit<'s>(&self, staged: &'s EraseStaged) -> Option<ToAudit<'s>> {
        Some(ToAudit {
            tables: &staged.tables.tables,
            dropped: &staged.dropped,
            early: &[],
        })
    }

    fn describe(&self, mut record: RunRecord, staged: &EraseStaged) -> RunRecord {
        record.erase = Some(staged.report.receipt.clone());
        record
    }

    fn staged_tables(staged: &mut EraseStaged) -> Option<&mut StagedTables> {
        Some(&mut staged.tables)
    }

    async fn finish(
        self,
        opened: Opened<'a>,
        staged: EraseStaged,
        record: Option<RunRecord>,
        _observer: Arc<dyn Observer>,
    ) -> Result<EraseReport> {
        tracing::debug!("erase: published");
        let EraseStaged {
            mut report,
            sources,
            erased,
            ..
        } = staged;
        let record =
            record.ok_or_else(|| Error::Internal("an erase finished without its record".into()))?;
        sources.commit()?;
        let run_id = record.run_id.clone();
        report.record = Some(record);
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

/// What the receipt says of the older snapshots that still hold the rows, and of the
/// environments (`envs`) whose branches do: an erase changes `main` only.
fn history(
    catalog: &PipelineCatalog,
    request: &EraseRequest,
    envs: &[&str],
    pipeline: &str,
) -> String {
    let mut text = snapshots_history(catalog, request);
    if !envs.is_empty() {
        text.push_str(&format!(
            "; the branches of environment(s) {} still hold the subject's rows (an erase changes main only): `pipeline env drop {pipeline} NAME` removes them, and --purge is refused until then",
            envs.join(", ")
        ));
    }
    text
}

/// What the receipt says of the older snapshots of `main` that still hold the rows.
fn snapshots_history(catalog: &PipelineCatalog, request: &EraseRequest) -> String {
    match (request.purge, catalog.kind()) {
        (true, "s3tables") => format!(
            "purged: every older snapshot of the erased tables expired; S3 Tables deletes the files only they referenced itself (its unreferenced-file removal marks them noncurrent after unreferencedDays, 3 by default, and deletes them nonCurrentDays later, 10 by default): with the defaults, by {}",
            (crate::fault::wall_now() + chrono::Duration::days(13)).format("%Y-%m-%d")
        ),
        (true, _) => "purged: every older snapshot of the erased tables expires and the files only they referenced are deleted by the maintain runs that follow this one under the same lock (their records name this erase; `pipeline run-info` of this run lists them)".to_string(),
        (false, _) => "older snapshots still hold the rows (for rollback) until they expire by the pipeline's [maintenance] settings; `pipeline erase --purge` removes them now".to_string(),
    }
}

/// A purge makes an erase physical on `main`; an environment's branches still hold the rows
/// (expiry keeps every branch head). Refused, nothing changed, until they are dropped.
async fn refuse_environments(catalog: &PipelineCatalog, pipeline: &Pipeline) -> Result<()> {
    let envs = crate::env::list_envs(catalog, pipeline).await?;
    if envs.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = envs.iter().map(|e| e.env.as_str()).collect();
    Err(Error::Usage(format!(
        "--purge: the tables have environment branches ({}) that still hold the subject's rows and that expiry keeps; nothing was changed. Drop them first (`pipeline env drop {} NAME`), then erase with --purge",
        names.join(", "),
        pipeline.name
    )))
}
