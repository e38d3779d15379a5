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

use super::audit::audit_staged;
use super::execute::execute;
use super::open::{open, Opened};
use super::options::RunOptions;
use super::report::{Observer, RunReport};
use crate::catalog::{new_run_id, RunKind, RunRecord};
use crate::commit::publish::publish_with_retry;
use crate::commit::JobContext;
use crate::error::Result;
use crate::fault::pause_point;
use crate::spec::Pipeline;

/// Runs the whole pipeline and publishes its tables atomically.
///
/// Runs of the same pipeline on the same catalog are serialized: a second run waits for the
/// first (up to `options.wait`), or fails at once when it is `LockWait(None)`.
pub async fn run_pipeline(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    options: RunOptions,
) -> Result<RunReport> {
    let clock = Instant::now();
    let Opened { validated, lock } = open(pipeline, options.wait, observer.clone()).await?;

    let started = Instant::now();
    let started_at = Utc::now();
    let run_id = new_run_id(started_at);
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
    )
    .await?;
    tracing::debug!(ms = clock.elapsed().as_millis() as u64, "every job staged");
    pause_point("staged");
    observer.publishing(executed.staged.len());
    let tables = executed
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
    let record = RunRecord::new(
        &run_id,
        kind,
        &pipeline.name,
        started_at,
        &options.invocation,
    )
    .with_quality(quality.clone());
    publish_with_retry(
        &validated.catalog,
        executed.staged,
        &record,
        pipeline.max_snapshots,
        &|table, attempt| observer.rebasing(table, attempt),
    )
    .await?;
    tracing::debug!(ms = clock.elapsed().as_millis() as u64, "published");
    drop(lock);

    Ok(RunReport {
        run_id,
        pipeline: pipeline.name.clone(),
        started_at: started_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        seconds: started.elapsed().as_secs_f64(),
        published: true,
        tables,
        jobs: executed.reports,
        quality,
    })
}
