//! `pipeline schedule status`: per pipeline, the last tick served and how it went, the tick due
//! now, the ticks missed, the next ticks (in the schedule's time zone and in UTC), who holds
//! the pipeline's run lock on this host and, on a remote catalog, which scheduler (on any host)
//! claims a tick. It only reads: nothing is created or changed, on the catalog or here.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::lease::{claimed_tick, holder_of, host_name};
use super::serve::{last_served, schedule_of};
use super::ticks::{due, next};
use crate::catalog::PipelineCatalog;
use crate::error::Result;
use crate::ingest::pending_files;
use crate::maintain::Due;
use crate::records::tick_key;
use crate::run::holder;
use crate::spec::Pipeline;

/// How many next ticks status shows.
const NEXT: usize = 3;

/// One tick, in UTC and in the schedule's time zone.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TickTime {
    pub utc: String,
    pub local: String,
}

/// The last tick served, from its run record.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LastTick {
    pub tick: String,
    pub run_id: String,
    /// `published`, `no-op` (nothing to do) or `failed`.
    pub result: String,
    pub tables: usize,
    pub error: Option<String>,
    pub finished_at: String,
}

/// One pipeline's schedule as it stands.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ScheduleStatus {
    pub pipeline: String,
    pub cron: String,
    pub timezone: String,
    pub catchup: String,
    pub last: Option<LastTick>,
    /// The tick a `schedule tick` now would run.
    pub due: Option<String>,
    /// Ticks that passed unserved and will not be run.
    pub missed: Vec<String>,
    pub next: Vec<TickTime>,
    /// This host's name: the pipeline's lock is per host.
    pub host: String,
    /// The run on this host holding the pipeline's lock (`pid N since TIME`), if one is in
    /// progress here.
    pub lock_holder: Option<String>,
    /// Whether the catalog is remote: schedulers on other hosts may serve the pipeline, and
    /// claim its ticks with a lease.
    pub remote: bool,
    /// The pipeline's tables that need maintenance now, why, and the command that does it
    /// (none where runs maintain them, or the catalog does).
    pub maintenance_due: Vec<Due>,
    /// On a remote catalog: the scheduler (on any host) whose lease claims a tick.
    pub lease_holder: Option<String>,
    /// When a tick is due: what its run would load, per ingest job (`bronze.x: 3 new
    /// file(s), 1200 bytes`, or `nothing new`).
    pub would_load: Vec<String>,
}

/// The status of `pipeline`'s schedule at `now`.
pub async fn status(pipeline: &Pipeline, now: DateTime<Utc>) -> Result<ScheduleStatus> {
    let schedule = schedule_of(pipeline)?;
    let catalog = PipelineCatalog::connect(&pipeline.catalog).await?;
    let served = last_served(&catalog, &pipeline.name).await?;
    let last = match served {
        None => None,
        Some(tick) => {
            let key = tick_key(tick);
            catalog
                .run_for_tick(&pipeline.name, &key)
                .await?
                .map(|r| LastTick {
                    tick: key,
                    result: match (&r.error, r.tables.is_empty()) {
                        (Some(_), _) => "failed",
                        (None, true) => "no-op",
                        (None, false) => "published",
                    }
                    .into(),
                    tables: r.tables.len(),
                    error: r.error.clone(),
                    finished_at: r.finished_at.clone(),
                    run_id: r.run_id,
                })
        }
    };
    let claimed = match catalog.remote() {
        Some(remote) => claimed_tick(remote, &pipeline.name).await?,
        None => None,
    };
    let due = due(schedule, now, served, claimed);
    let tz = schedule.timezone;
    Ok(ScheduleStatus {
        pipeline: pipeline.name.clone(),
        cron: schedule.cron_text.clone(),
        timezone: tz.name().to_string(),
        catchup: schedule.catchup.name().into(),
        last,
        due: due.tick.map(tick_key),
        missed: due.missed.iter().map(|t| tick_key(*t)).collect(),
        next: next(schedule, now, NEXT)
            .into_iter()
            .map(|t| TickTime {
                utc: tick_key(t),
                local: t.with_timezone(&tz).to_rfc3339(),
            })
            .collect(),
        host: host_name(),
        lock_holder: holder(&catalog.lock_anchor()?, &pipeline.name)?,
        remote: catalog.remote().is_some(),
        lease_holder: match catalog.remote() {
            Some(remote) => holder_of(remote, &pipeline.name).await?,
            None => None,
        },
        maintenance_due: due_or_warn(&catalog, pipeline).await,
        would_load: match due.tick {
            Some(_) => would_load(&catalog, pipeline).await?,
            None => Vec::new(),
        },
    })
}

/// What a run of `pipeline` would load now, per ingest job.
async fn would_load(catalog: &PipelineCatalog, pipeline: &Pipeline) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for job in &pipeline.ingests {
        let pending = pending_files(catalog, &pipeline.project_dir, job).await?;
        let bytes: u64 = pending.new.iter().map(|(_, b)| b).sum();
        out.push(match (pending.new.len(), pending.changed.len()) {
            (0, 0) => format!("{}: nothing new", job.table),
            (n, 0) => format!("{}: {n} new file(s), {bytes} bytes", job.table),
            (n, c) => format!(
                "{}: {n} new file(s), {bytes} bytes; {c} loaded file(s) changed (the run stops on them unless --reload-changed)",
                job.table
            ),
        });
    }
    Ok(out)
}

/// The tables of `pipeline` that need maintenance; a plan that cannot be made (a table that
/// cannot be read) is a warning, not a failed status.
async fn due_or_warn(catalog: &PipelineCatalog, pipeline: &Pipeline) -> Vec<Due> {
    crate::maintain::due(catalog, pipeline)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(pipeline = %pipeline.name, "cannot tell whether its tables need maintenance: {e}");
            Vec::new()
        })
}
