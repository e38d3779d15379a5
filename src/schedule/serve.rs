//! Serving a pipeline's due tick: the run (at most once per tick: the tick is its record's
//! key), with the schedule's timeout and its retries for transient failures; a tick that fails
//! for good is recorded as failed and its `on_failure` command run.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::lease::{self, Leased};
use super::ticks::{due, next};
use crate::catalog::PipelineCatalog;
use crate::error::{Error, Result};
use crate::operation::Observer;
use crate::records::{new_run_id, tick_key, Invocation, RunRecord};
use crate::run::{
    record_failure, run_tick, Failure, LockWait, RunOptions, Served, Tenure, Witness,
};
use crate::spec::{Pipeline, Schedule};

/// How long the `on_failure` command may take.
const ON_FAILURE_TIMEOUT: Duration = Duration::from_secs(600);

/// What serving one pipeline's schedule did.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum TickResult {
    /// No tick is due; the next one.
    NotDue { next: Option<String> },
    /// The tick's run published (or recorded a no-op).
    Ran {
        tick: String,
        run_id: String,
        tables: usize,
        attempts: u32,
    },
    /// A run record already holds the tick (another scheduler served it).
    AlreadyServed { tick: String, run_id: String },
    /// Another run of the pipeline holds its lock on this host (`by`: `lock`), or another
    /// scheduler (any host) claims the tick (`by`: `lease`): the tick is left to it.
    Busy {
        tick: String,
        holder: String,
        by: &'static str,
    },
    /// This scheduler lost its claim on the tick while the run went on (another host took it
    /// over): the run stopped before publishing; nothing was published or recorded.
    Lost { tick: String, error: String },
    /// The tick's run failed for good; the failure is recorded under `run_id`.
    Failed {
        tick: String,
        run_id: String,
        error: String,
        attempts: u32,
    },
    /// The schedule could not be served at all (its spec or catalog could not be read):
    /// nothing was run or recorded, and the next call tries again.
    Error { error: String },
}

/// One pipeline's schedule served at a moment.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TickReport {
    pub pipeline: String,
    #[serde(flatten)]
    pub result: TickResult,
    /// Ticks that passed unserved and will not be run.
    pub missed: Vec<String>,
}

/// The pipeline's schedule, or an error saying it has none.
pub fn schedule_of(pipeline: &Pipeline) -> Result<&Schedule> {
    pipeline.schedule.as_ref().ok_or_else(|| {
        Error::Usage(format!(
            "pipeline `{}` has no [schedule] (add e.g. `[schedule]\\ncron = \"0 2 * * *\"` to {})",
            pipeline.name,
            pipeline.file.display()
        ))
    })
}

/// The latest tick a run record of `pipeline` holds.
pub async fn last_served(
    catalog: &PipelineCatalog,
    pipeline: &str,
) -> Result<Option<DateTime<Utc>>> {
    Ok(catalog
        .last_tick(pipeline)
        .await?
        .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
        .map(|t| t.with_timezone(&Utc)))
}

/// Serves `pipeline`'s schedule at `now`: runs the due tick, if any, at most once.
pub async fn serve(
    pipeline: &Pipeline,
    now: DateTime<Utc>,
    observer: Arc<dyn Observer>,
) -> Result<TickReport> {
    let schedule = schedule_of(pipeline)?;
    let catalog = PipelineCatalog::connect(&pipeline.catalog).await?;
    let served = last_served(&catalog, &pipeline.name).await?;
    let remote = catalog.remote().cloned();
    drop(catalog);
    let claimed = match &remote {
        Some(remote) => lease::claimed_tick(remote, &pipeline.name).await?,
        None => None,
    };
    let due = due(schedule, now, served, claimed);
    let missed = due.missed.iter().map(|t| tick_key(*t)).collect();
    let report = |result| TickReport {
        pipeline: pipeline.name.clone(),
        result,
        missed,
    };
    let Some(tick) = due.tick else {
        return Ok(report(TickResult::NotDue {
            next: next(schedule, now, 1).first().map(|t| tick_key(*t)),
        }));
    };
    // On a remote catalog, schedulers on other hosts may serve this pipeline too.
    let lease = match remote {
        Some(remote) => {
            match lease::take(remote, &pipeline.name, &tick_key(tick), schedule.lease).await? {
                Leased::Taken(lease) => Some(lease),
                Leased::HeldBy(holder) => {
                    return Ok(report(TickResult::Busy {
                        tick: tick_key(tick),
                        holder,
                        by: "lease",
                    }))
                }
            }
        }
        None => None,
    };
    let tenure = lease.as_ref().map(|l| l.tenure());
    let result = run_with_retries(pipeline, schedule, tick, tenure, observer).await;
    if let Some(lease) = lease {
        lease.release().await;
    }
    Ok(report(result?))
}

async fn run_with_retries(
    pipeline: &Pipeline,
    schedule: &Schedule,
    tick: DateTime<Utc>,
    tenure: Option<Arc<dyn Tenure>>,
    observer: Arc<dyn Observer>,
) -> Result<TickResult> {
    let key = tick_key(tick);
    let mut ours = Vec::new();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let started = crate::fault::wall_now();
        let run_id = new_run_id(started);
        ours.push(run_id.clone());
        let options = tick_options(tick, &run_id, tenure.clone());
        let witness = Witness::new(observer.clone());
        let error = match attempt_run(pipeline, schedule, witness.clone(), &options).await {
            Ok(Served::Ran(report)) => {
                return Ok(TickResult::Ran {
                    tick: key,
                    run_id: report.run_id,
                    tables: report.tables.len(),
                    attempts: attempt,
                })
            }
            Ok(Served::AlreadyServed { run_id }) if !ours.contains(&run_id) => {
                return Ok(TickResult::AlreadyServed { tick: key, run_id })
            }
            // An earlier attempt of ours published after all (its answer was lost).
            Ok(Served::AlreadyServed { .. }) => {
                Error::Failed("an earlier attempt's publish went through".into())
            }
            Err(Error::Busy(holder)) => {
                return Ok(TickResult::Busy {
                    tick: key,
                    holder,
                    by: "lock",
                })
            }
            Err(Error::LeaseLost(why)) => return lost(pipeline, key, why, &ours, attempt).await,
            Err(e) => e,
        };
        let retry = error.is_transient() && attempt <= schedule.retries;
        if retry {
            tracing::warn!(
                pipeline = %pipeline.name,
                tick = %key,
                attempt,
                "transient failure, retrying in {}s: {error}",
                schedule.retry_delay.as_secs()
            );
            tokio::time::sleep(schedule.retry_delay).await;
            continue;
        }
        let message = crate::secrets::redact(&error.to_string()).into_owned();
        let failure = Failure {
            run_id: run_id.clone(),
            started,
            error: message.clone(),
            trail: witness.trail(),
        };
        let found = record_failure(pipeline, observer, &options, &failure).await?;
        return Ok(match found {
            // Whatever failed, a record holds the tick: it was served (by an attempt of ours
            // whose publish went through before the failure, or by another scheduler).
            Some(record) => served_result(key, record, &ours, attempt),
            None => {
                on_failure(pipeline, schedule, &run_id, &key, &message).await;
                TickResult::Failed {
                    tick: key,
                    run_id,
                    error: message,
                    attempts: attempt,
                }
            }
        });
    }
}

/// The options of run `run_id` serving `tick`: no waiting for the lock, the tick named as the
/// reason, the scheduler's claim to confirm before publishing.
fn tick_options(tick: DateTime<Utc>, run_id: &str, tenure: Option<Arc<dyn Tenure>>) -> RunOptions {
    let mut options = RunOptions::new(LockWait(None));
    options.tick = Some(tick);
    options.run_id = Some(run_id.to_string());
    let reason = format!("scheduled tick {}", tick_key(tick));
    options.invocation = Invocation::current(Some(reason), None);
    options.tenure = tenure;
    options
}

/// One attempt at the tick's run, under the schedule's timeout; a panic in it is a failure of
/// the run like any other (the scheduler goes on).
async fn attempt_run(
    pipeline: &Pipeline,
    schedule: &Schedule,
    observer: Arc<dyn Observer>,
    options: &RunOptions,
) -> Result<Served> {
    let run = AssertUnwindSafe(run_tick(pipeline, observer, options.clone())).catch_unwind();
    let outcome = match schedule.timeout {
        Some(limit) => match tokio::time::timeout(limit, run).await {
            Ok(outcome) => outcome,
            Err(_) => {
                return Err(Error::Failed(format!(
                    "the run took longer than the schedule's timeout ({}s) and was stopped",
                    limit.as_secs()
                )))
            }
        },
        None => run.await,
    };
    outcome.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(Error::Internal(format!("the run panicked: {what}")))
    })
}

/// The run stopped because this scheduler lost its claim on the tick: served by another
/// scheduler if a record holds it by now, else left to the scheduler that holds it. Nothing is
/// recorded either way.
async fn lost(
    pipeline: &Pipeline,
    key: String,
    why: String,
    ours: &[String],
    attempts: u32,
) -> Result<TickResult> {
    let catalog = PipelineCatalog::connect(&pipeline.catalog).await?;
    Ok(match catalog.run_for_tick(&pipeline.name, &key).await? {
        Some(record) => served_result(key, record, ours, attempts),
        None => TickResult::Lost {
            tick: key,
            error: crate::secrets::redact(&Error::LeaseLost(why).to_string()).into_owned(),
        },
    })
}

/// How a tick that a record holds was served: by one of `ours` (the runs this scheduler
/// tried), or by another scheduler.
fn served_result(key: String, record: RunRecord, ours: &[String], attempts: u32) -> TickResult {
    if ours.contains(&record.run_id) {
        TickResult::Ran {
            tick: key,
            run_id: record.run_id,
            tables: record.tables.len(),
            attempts,
        }
    } else {
        TickResult::AlreadyServed {
            tick: key,
            run_id: record.run_id,
        }
    }
}

/// Runs the schedule's `on_failure` command (in the project folder) with the run, tick and
/// error in its environment. Its own failure is logged, never fatal.
async fn on_failure(
    pipeline: &Pipeline,
    schedule: &Schedule,
    run_id: &str,
    tick: &str,
    error: &str,
) {
    let Some((program, args)) = schedule.on_failure.split_first() else {
        return;
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(&pipeline.project_dir)
        .env("PIPELINE_NAME", &pipeline.name)
        .env("PIPELINE_RUN_ID", run_id)
        .env("PIPELINE_TICK", tick)
        .env("PIPELINE_ERROR", crate::secrets::redact(error).as_ref())
        .kill_on_drop(true);
    match tokio::time::timeout(ON_FAILURE_TIMEOUT, command.status()).await {
        Ok(Ok(status)) if status.success() => {}
        Ok(Ok(status)) => {
            tracing::warn!(pipeline = %pipeline.name, "on_failure command {program} exited with {status}")
        }
        Ok(Err(e)) => {
            tracing::warn!(pipeline = %pipeline.name, "on_failure command {program} could not start: {e}")
        }
        Err(_) => {
            tracing::warn!(pipeline = %pipeline.name, "on_failure command {program} took longer than {}s; stopped", ON_FAILURE_TIMEOUT.as_secs())
        }
    }
}
