//! `run_pipeline`: one run of a pipeline, end to end, as named steps.
//!
//! ```text
//!  open      validate the spec against the catalog, take the pipeline's run lock, resolve a
//!            publish an earlier command left half done            (open.rs)
//!  execute   every job in scope, in dependency order; each stages its tables   (execute.rs)
//!  audit     the expectations on the staged tables; a failed `fail` stops here  (audit.rs)
//!  publish   every staged table at once, with the run record; conflicts rebased and retried
//!            (commit::publish)
//! ```
//!
//! Guarantee: either every table of the run moves to its new snapshot in one catalog
//! transaction, or (on any error, in any step) none does. Data files written by a failed run
//! are never referenced by any table.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use chrono::{SecondsFormat, Utc};

use super::execute::{execute, Start};
use super::failed::{failure_note, last_failure, record_failure, Failure};
use super::options::RunOptions;
use super::report::RunReport;
use super::witness::Witness;
use crate::catalog::PipelineCatalog;
use crate::commit::publish::Publication;
use crate::commit::JobContext;
use crate::engine::return_freed_memory;
use crate::error::{Error, Result};
use crate::fault::{pause_point, pause_point_async};
use crate::maintain::after_run;
use crate::operation::audit::EarlyResults;
use crate::operation::{
    operate, Identity, JobReport, Observer, Opened, Opening, RunStart, Scope, StagedTables,
    Staging, TableOperation, ToAudit,
};
use crate::records::lock::LockWait;
use crate::records::{new_run_id, tick_key, RunKind, RunRecord};
use crate::spec::{Pipeline, TableName};

/// What a run for a scheduled tick did.
#[derive(Debug)]
pub enum Served {
    /// The run ran and published (or recorded a no-op).
    Ran(Box<RunReport>),
    /// A run record already holds the tick: it was served before, by run `run_id`.
    AlreadyServed { run_id: String },
}

/// Runs the whole pipeline and publishes its tables atomically.
///
/// Runs of the same pipeline on the same catalog are serialized: a second run waits for the
/// first (up to `options.wait`), or fails at once when it is `LockWait(None)`.
///
/// A run that fails once it holds the lock is recorded as failed (the error, the jobs that
/// finished staging, the checks evaluated; see [`record_failure`]), so `pipeline runs` shows
/// it and the next run names it. A run refused before it started (a spec error, a wrong flag,
/// the lock held) is not.
pub async fn run_pipeline(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    mut options: RunOptions,
) -> Result<RunReport> {
    let started = crate::fault::wall_now();
    let run_id = options
        .run_id
        .get_or_insert_with(|| new_run_id(started))
        .clone();
    let witness = Witness::new(observer.clone());
    let error = match run(pipeline, witness.clone(), options.clone()).await {
        Ok(Served::Ran(report)) => return Ok(*report),
        Ok(Served::AlreadyServed { run_id }) => {
            return Err(Error::Usage(format!(
                "this tick was already served by run {run_id}"
            )))
        }
        Err(e) if !e.is_run_failure() => return Err(e),
        Err(e) => e,
    };
    let failure = Failure {
        run_id,
        started,
        error: crate::secrets::redact(&error.to_string()).into_owned(),
        trail: witness.trail(),
    };
    match record_failure(pipeline, observer, &options, &failure).await {
        Ok(None) => tracing::info!(run = %failure.run_id, "the failed run was recorded"),
        Ok(Some(record)) if record.is_failure() => {}
        // The run's publish went through after all (its answer was lost).
        Ok(Some(record)) => {
            return Err(Error::Failed(format!(
                "run {} failed after its publish went through ({error}); `pipeline run-info {}` shows what it published",
                record.run_id, record.run_id
            )))
        }
        Err(e) => tracing::warn!("the failed run could not be recorded: {e}"),
    }
    Err(error)
}

/// Runs the pipeline for a scheduled tick (`options.tick`), at most once: under the pipeline's
/// lock, a tick that a run record already holds is not run again. The run's record holds the
/// tick, in the same commit as its tables; on a remote catalog that commit is refused when
/// another scheduler's record of the tick got there first (schedulers on two hosts), and the
/// tick counts as served by that run.
pub async fn run_tick(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    options: RunOptions,
) -> Result<Served> {
    match run(pipeline, observer, options).await {
        Err(Error::TickServed { run_id, .. }) => Ok(Served::AlreadyServed { run_id }),
        other => other,
    }
}

/// The run of a tick, if a record of `pipeline` holds it.
pub(super) async fn served_by(
    catalog: &PipelineCatalog,
    pipeline: &str,
    tick: chrono::DateTime<Utc>,
) -> Result<Option<String>> {
    let key = tick_key(tick);
    Ok(catalog
        .run_for_tick(pipeline, &key)
        .await?
        .map(|r| r.run_id))
}

async fn run(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    options: RunOptions,
) -> Result<Served> {
    let operation = RunOperation {
        pipeline,
        options: Arc::new(options),
        clock: Instant::now(),
        reports: Vec::new(),
    };
    operate(operation, observer).await
}

/// A run as the operation skeleton runs it: every job in scope staged, audited, published
/// with a record of kind `run` (or `backfill`), then maintained when `[maintenance] after_run`.
struct RunOperation<'a> {
    pipeline: &'a Pipeline,
    options: Arc<RunOptions>,
    clock: Instant,
    /// The jobs' reports, once staged.
    reports: Vec<JobReport>,
}

/// What the jobs of a run staged.
struct RunStaged {
    tables: StagedTables,
    dropped: HashMap<TableName, BTreeMap<String, u64>>,
    /// Expectations audited while later jobs ran.
    early: EarlyResults,
    run: RunStart,
}

impl<'a> TableOperation<'a> for RunOperation<'a> {
    type Staged = RunStaged;
    type Output = Served;

    fn opening(&self) -> Opening<'a> {
        Opening::Validated {
            pipeline: self.pipeline,
            scope: Scope::Pipeline,
        }
    }

    fn wait(&self) -> LockWait {
        self.options.wait
    }

    fn identity(&self) -> Identity<'_> {
        Identity {
            kind: match self.options.backfill {
                Some(_) => RunKind::Backfill,
                None => RunKind::Run,
            },
            pipeline: &self.pipeline.name,
            invocation: &self.options.invocation,
            run_id: self.options.run_id.clone(),
            started: None,
        }
    }

    async fn stage(
        &mut self,
        opened: &Opened<'a>,
        run: &RunStart,
        observer: &Arc<dyn Observer>,
    ) -> Result<Staging<RunStaged, Served>> {
        let validated = opened.validated("a run")?;
        if let Some(tick) = self.options.tick {
            if let Some(run_id) = served_by(&validated.catalog, &self.pipeline.name, tick).await? {
                return Ok(Staging::Done(Served::AlreadyServed { run_id }));
            }
        }
        if let Some(last) = last_failure(&validated.catalog, &self.pipeline.name).await? {
            observer.warning(&failure_note(&last));
        }
        let ctx = Arc::new(JobContext {
            catalog: validated.catalog.clone(),
            project_dir: self.pipeline.project_dir.clone(),
            pipeline: self.pipeline.name.clone(),
            run_id: run.run_id.clone(),
            started_at_micros: run.started.timestamp_micros(),
            reload_changed: self.options.reload_changed,
        });
        let executed = execute(
            ctx,
            Arc::new(self.pipeline.clone()),
            validated,
            self.options.clone(),
            observer.clone(),
            Start {
                audit_early: true,
                ..Start::default()
            },
        )
        .await?;
        tracing::debug!(
            ms = self.clock.elapsed().as_millis() as u64,
            "every job staged"
        );
        return_freed_memory();
        pause_point("staged");
        self.reports = executed.reports;
        Ok(Staging::Publish(RunStaged {
            tables: StagedTables {
                tables: executed.staged,
                max_snapshots: self.pipeline.max_snapshots,
            },
            dropped: executed.dropped,
            early: executed.early,
            run: run.clone(),
        }))
    }

    fn to_audit<'s>(&self, staged: &'s RunStaged) -> Option<ToAudit<'s>> {
        Some(ToAudit {
            tables: &staged.tables.tables,
            dropped: &staged.dropped,
            early: &staged.early,
        })
    }

    fn describe(&self, mut record: RunRecord, _staged: &RunStaged) -> RunRecord {
        record.env = self.pipeline.env.clone();
        if record.env.is_some() {
            // Main did not move: nothing to undo there (rollback refuses it).
            record.undo.clear();
        }
        match self.options.tick {
            Some(tick) => record.serving(tick),
            None => record,
        }
    }

    fn staged_tables(staged: &mut RunStaged) -> Option<&mut StagedTables> {
        Some(&mut staged.tables)
    }

    async fn publication(
        &mut self,
        catalog: &PipelineCatalog,
        staged: &mut RunStaged,
        record: RunRecord,
    ) -> Result<Option<Publication>> {
        // A scheduled run whose scheduler lost its claim on the tick stops here.
        if let Some(tenure) = &self.options.tenure {
            tenure.confirm().await?;
        }
        Ok(Some(staged.tables.publication(catalog, record).await?))
    }

    async fn finish(
        self,
        opened: Opened<'a>,
        staged: RunStaged,
        record: Option<RunRecord>,
        observer: Arc<dyn Observer>,
    ) -> Result<Served> {
        tracing::debug!(ms = self.clock.elapsed().as_millis() as u64, "published");
        pause_point_async("published").await;
        let pipeline = self.pipeline;
        // Sorted by name, as the run staged them.
        let tables: Vec<String> = staged
            .tables
            .tables
            .iter()
            .map(|t| t.table.to_string())
            .collect();
        let (maintenance, maintenance_error) = match &opened.lock {
            Some(lock) if pipeline.maintains_after_run() && !tables.is_empty() => {
                let invocation = &self.options.invocation;
                match after_run(
                    &opened.catalog,
                    pipeline,
                    &tables,
                    invocation,
                    observer,
                    lock,
                )
                .await
                {
                    Ok(report) => (Some(report), None),
                    Err(e) => (None, Some(e)),
                }
            }
            _ => (None, None),
        };
        drop(opened);
        let quality = record.map(|r| r.quality).unwrap_or_default();
        Ok(Served::Ran(Box::new(RunReport {
            run_id: staged.run.run_id,
            pipeline: pipeline.name.clone(),
            started_at: staged
                .run
                .started
                .to_rfc3339_opts(SecondsFormat::Secs, true),
            seconds: self.clock.elapsed().as_secs_f64(),
            published: true,
            tables,
            jobs: self.reports,
            quality,
            maintenance,
            maintenance_error,
        })))
    }
}
