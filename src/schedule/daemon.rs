//! `pipeline schedule run`: a foreground scheduler for the pipelines of a project, one task
//! per pipeline. Each sleeps until its next tick and serves it; the spec is read again at every
//! tick (a changed spec or SQL takes effect without a restart) and the catalog is connected
//! anew for every run, so credentials are fetched fresh (the AWS chain, OAuth tokens) however
//! long the scheduler runs. SIGTERM or SIGINT: a run in progress finishes (and publishes), then
//! the scheduler exits.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::clock::Clock;
use super::serve::{schedule_of, serve, TickReport, TickResult};
use super::ticks::next;
use crate::error::{Error, Result};
use crate::operation::Observer;
use crate::spec::load_with_catalog;

/// How long a pipeline waits before trying again when another run holds its lock, or when its
/// spec cannot be read.
const BUSY_RETRY: Duration = Duration::from_secs(30);

/// What the daemon is told about each served tick.
pub trait TickObserver: Send + Sync {
    fn served(&self, report: &TickReport);
    fn failed_to_serve(&self, pipeline: &str, error: &Error);
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
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
        _ = async { while tasks.join_next().await.is_some() {} } => return Ok(()),
    }
    tracing::info!("stopping: runs in progress finish first");
    let _ = stop.send(true);
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            return Err(Error::Internal(format!("a scheduler task failed: {e}")));
        }
    }
    Ok(())
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
        let wait = match once(&project, &name, catalog.as_deref(), clock, observer.clone()).await {
            Ok((report, wait)) => {
                ticks.served(&report);
                wait
            }
            Err(e) => {
                ticks.failed_to_serve(&name, &e);
                BUSY_RETRY
            }
        };
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
    let report = serve(&spec, clock.now(), observer).await?;
    let wait = match &report.result {
        TickResult::Busy { .. } => BUSY_RETRY,
        _ => {
            let now = clock.now();
            let schedule = schedule_of(&spec)?;
            match next(schedule, now, 1).first() {
                Some(t) => (*t - now).to_std().unwrap_or_default(),
                None => Duration::from_secs(24 * 3600),
            }
        }
    };
    Ok((report, wait))
}
