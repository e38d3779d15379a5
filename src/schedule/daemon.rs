//! `pipeline schedule run`: a foreground scheduler for the pipelines of a project, one task
//! per pipeline. Each sleeps until its next tick and serves it; the spec is read again at every
//! tick (a changed spec or SQL takes effect without a restart) and the catalog is connected
//! anew for every run, so credentials are fetched fresh (the AWS chain, OAuth tokens) however
//! long the scheduler runs. SIGTERM or SIGINT: a run in progress finishes (and publishes), then
//! the scheduler exits.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::FutureExt;
use tokio::sync::watch;

use super::clock::Clock;
use super::serve::{schedule_of, serve, TickReport, TickResult};
use super::ticks::next;
use crate::error::{Error, Result};
use crate::operation::Observer;
use crate::spec::{load_with_catalog, Schedule};

/// How long a pipeline waits before trying again when another run holds its lock, or when its
/// spec cannot be read.
const BUSY_RETRY: Duration = Duration::from_secs(30);

/// What the daemon is told about each served tick.
pub trait TickObserver: Send + Sync {
    fn served(&self, report: &TickReport);
    fn failed_to_serve(&self, pipeline: &str, error: &Error);
    /// The scheduler of `pipeline` looks again at `until` (the next tick, or a retry), `wait`
    /// from now.
    fn waiting(&self, _pipeline: &str, _until: chrono::DateTime<chrono::Utc>, _wait: Duration) {}
}

/// Runs the schedules of `pipelines` (names in `project`) until SIGTERM or SIGINT.
pub async fn run_daemon(
    project: &Path,
    pipelines: Vec<String>,
    catalog: Option<String>,
    clock: Clock,
    observer: Arc<dyn Observer>,
    ticks: Arc<dyn TickObserver>,
) -> Result<()> {
    let (stop, stopping) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    for name in pipelines {
        let (project, catalog, observer, ticks, stopping) = (
            project.to_path_buf(),
            catalog.clone(),
            observer.clone(),
            ticks.clone(),
            stopping.clone(),
        );
        tasks.spawn(async move {
            pipeline_loop(project, name, catalog, clock, observer, ticks, stopping).await
        });
    }
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Error::Internal(format!("cannot listen for SIGTERM: {e}")))?;
    // A pipeline's task ends only when told to stop (it survives its runs' failures and
    // panics): one that ends before is a bug, and the scheduler exits with an error.
    let ended = tokio::select! {
        _ = terminate.recv() => None,
        _ = tokio::signal::ctrl_c() => None,
        joined = tasks.join_next() => Some(joined),
    };
    if let Some(joined) = ended {
        let why = match joined {
            Some(Err(e)) => format!("a pipeline's scheduler task failed: {e}"),
            _ => "a pipeline's scheduler task ended".into(),
        };
        let _ = stop.send(true);
        while tasks.join_next().await.is_some() {}
        return Err(Error::Internal(why));
    }
    tracing::info!("stopping: runs in progress finish first");
    let _ = stop.send(true);
    let mut failed = None;
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            failed = Some(Error::Internal(format!("a scheduler task failed: {e}")));
        }
    }
    failed.map_or(Ok(()), Err)
}

async fn pipeline_loop(
    project: PathBuf,
    name: String,
    catalog: Option<String>,
    clock: Clock,
    observer: Arc<dyn Observer>,
    ticks: Arc<dyn TickObserver>,
    mut stopping: watch::Receiver<bool>,
) {
    loop {
        if *stopping.borrow() {
            return;
        }
        let serving = once(&project, &name, catalog.as_deref(), clock, observer.clone());
        let outcome = AssertUnwindSafe(serving)
            .catch_unwind()
            .await
            .unwrap_or_else(|_| {
                Err(Error::Internal(
                    "serving the schedule panicked (see above)".into(),
                ))
            });
        let wait = match outcome {
            Ok((report, wait)) => {
                ticks.served(&report);
                wait
            }
            Err(e) => {
                ticks.failed_to_serve(&name, &e);
                BUSY_RETRY
            }
        };
        let until = clock.now() + chrono::Duration::from_std(wait).unwrap_or_default();
        ticks.waiting(&name, until, wait);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stopping.changed() => return,
        }
    }
}

/// Serves the pipeline's due tick (if any); returns what happened and how long to sleep.
async fn once(
    project: &Path,
    name: &str,
    catalog: Option<&str>,
    clock: Clock,
    observer: Arc<dyn Observer>,
) -> Result<(TickReport, Duration)> {
    let spec = load_with_catalog(project, name, catalog)?;
    let served_at = clock.now();
    let report = serve(&spec, served_at, observer).await?;
    let schedule = schedule_of(&spec)?;
    let wait = match &report.result {
        TickResult::Busy { by: "lease", .. } | TickResult::Lost { .. } => lease_retry(schedule),
        TickResult::Busy { .. } => BUSY_RETRY,
        _ => until_next(schedule, served_at, clock.now()),
    };
    Ok((report, wait))
}

/// How long to wait before looking again at a tick another scheduler claims: half a lease (at
/// most [`BUSY_RETRY`]), so that a crashed holder's tick is taken over soon after its claim
/// lapses, and the next tick is not missed while the holder's run goes on.
fn lease_retry(schedule: &Schedule) -> Duration {
    (schedule.lease / 2).min(BUSY_RETRY)
}

/// How long to sleep at `now` after serving the schedule at `served_at`: until the first tick
/// after `served_at`, not after `now`, so a tick that fell due while a long run went on is
/// served at once (by the catchup policy) instead of being skipped.
pub fn until_next(schedule: &Schedule, served_at: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    match next(schedule, served_at, 1).first() {
        Some(t) => (*t - now).to_std().unwrap_or_default(),
        None => Duration::from_secs(24 * 3600),
    }
}
