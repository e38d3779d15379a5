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

use std::sync::Arc;
use std::time::Instant;

use chrono::{SecondsFormat, Utc};

use super::execute::{execute, Start};
use super::options::RunOptions;
use super::report::RunReport;
use crate::commit::publish::publish_with_retry;
use crate::commit::JobContext;
use crate::engine::return_freed_memory;
use crate::error::{Error, Result};
use crate::fault::pause_point;
use crate::maintain::after_run;
use crate::operation::audit::audit_staged;
use crate::operation::open::{open, Opened, Scope};
use crate::operation::Observer;
use crate::records::{new_run_id, tick_key, RunKind, RunRecord};
use crate::spec::Pipeline;

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
pub async fn run_pipeline(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    options: RunOptions,
) -> Result<RunReport> {
    match run(pipeline, observer, options).await? {
        Served::Ran(report) => Ok(*report),
        Served::AlreadyServed { run_id } => Err(Error::Usage(format!(
            "this tick was already served by run {run_id}"
        ))),
    }
}

/// Runs the pipeline for a scheduled tick (`options.tick`), at most once: under the pipeline's
/// lock, a tick that a run record already holds is not run again. The run's record holds the
/// tick, in the same commit as its tables.
pub async fn run_tick(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    options: RunOptions,
) -> Result<Served> {
    run(pipeline, observer, options).await
}

/// The run of a tick, if a record of `pipeline` holds it.
pub(super) async fn served_by(
    catalog: &crate::catalog::PipelineCatalog,
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
    let clock = Instant::now();
    let Opened { validated, lock } =
        open(pipeline, options.wait, observer.clone(), Scope::Pipeline).await?;
    if let Some(tick) = options.tick {
        if let Some(run_id) = served_by(&validated.catalog, &pipeline.name, tick).await? {
            return Ok(Served::AlreadyServed { run_id });
        }
    }

    let started = Instant::now();
    let started_at = Utc::now();
    let run_id = options
        .run_id
        .clone()
        .unwrap_or_else(|| new_run_id(started_at));
    let ctx = Arc::new(JobContext {
        catalog: validated.catalog.clone(),
        project_dir: pipeline.project_dir.clone(),
        pipeline: pipeline.name.clone(),
        run_id: run_id.clone(),
        started_at_micros: started_at.timestamp_micros(),
        reload_changed: options.reload_changed,
    });
    let options = Arc::new(options);
    let executed = execute(
        ctx,
        Arc::new(pipeline.clone()),
        &validated,
        options.clone(),
        observer.clone(),
        Start::default(),
    )
    .await?;
    tracing::debug!(ms = clock.elapsed().as_millis() as u64, "every job staged");
    return_freed_memory();
    pause_point("staged");
    observer.publishing(executed.staged.len());
    let tables: Vec<String> = executed
        .staged
        .iter()
        .map(|t| t.table.to_string())
        .collect();

    let quality = audit_staged(
        pipeline,
        &validated,
        &executed.staged,
        &executed.dropped,
        &run_id,
        started_at.timestamp_micros(),
        observer.as_ref(),
    )
    .await?;

    let kind = match options.backfill {
        Some(_) => RunKind::Backfill,
        None => RunKind::Run,
    };
    let mut record = RunRecord::new(
        &run_id,
        kind,
        &pipeline.name,
        started_at,
        &options.invocation,
    )
    .with_quality(quality.clone());
    if let Some(tick) = options.tick {
        record = record.serving(tick);
    }
    publish_with_retry(
        &validated.catalog,
        executed.staged,
        &record,
        pipeline.max_snapshots,
        &|table, attempt| observer.rebasing(table, attempt),
    )
    .await?;
    tracing::debug!(ms = clock.elapsed().as_millis() as u64, "published");
    let (maintenance, maintenance_error) = if pipeline.maintenance.after_run && !tables.is_empty() {
        match after_run(
            &validated.catalog,
            pipeline,
            &tables,
            &options.invocation,
            observer.clone(),
            &lock,
        )
        .await
        {
            Ok(report) => (Some(report), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    drop(lock);

    Ok(Served::Ran(Box::new(RunReport {
        run_id,
        pipeline: pipeline.name.clone(),
        started_at: started_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        seconds: started.elapsed().as_secs_f64(),
        published: true,
        tables,
        jobs: executed.reports,
        quality,
        maintenance,
        maintenance_error,
    })))
}
