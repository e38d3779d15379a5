//! How a run is asked to run: waiting for the pipeline's lock, what to recompute, and who
//! asks and why.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::plan::{Backfill, Selector};
use crate::records::lock::LockWait;
use crate::records::Invocation;
use crate::spec::Engine;

/// A claim the run must still hold when it publishes: a scheduler's lease on the tick it
/// serves, on a remote catalog.
#[async_trait::async_trait]
pub trait Tenure: Send + Sync + std::fmt::Debug {
    /// `Ok` while the claim is this scheduler's (renewing it now if renewals have not gone
    /// through lately); [`Error::LeaseLost`](crate::error::Error::LeaseLost) when it is not:
    /// the run then stops before publishing.
    async fn confirm(&self) -> Result<()>;
}

/// How a run chooses what to recompute.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How long to wait for another run of the pipeline; `None` fails at once.
    pub wait: LockWait,
    /// Recompute every transform whole, whatever changed.
    pub full_refresh: bool,
    /// Load again source files whose content changed since they were loaded, replacing their
    /// old rows (instead of failing).
    pub reload_changed: bool,
    /// Set for a backfill: no ingest job runs, and only the selected tables (and what is
    /// downstream of them) are recomputed.
    pub backfill: Option<Backfill>,
    /// Who runs it and why, for the run record.
    pub invocation: Invocation,
    /// The scheduled tick the run serves (`pipeline schedule`): recorded, and run at most once.
    pub tick: Option<DateTime<Utc>>,
    /// The run's id, when the caller chose it (default: from the start time).
    pub run_id: Option<String>,
    /// Where transforms run, when the command line says (`--engine`); else the spec's
    /// `[engine]`.
    pub engine: Option<Engine>,
    /// The claim a scheduled run confirms before each publish attempt.
    pub tenure: Option<Arc<dyn Tenure>>,
    /// `--select`: only the jobs these name run (empty: every job in scope).
    pub select: Vec<Selector>,
}

impl RunOptions {
    /// A normal run that waits up to `wait` for the pipeline's lock.
    pub fn new(wait: LockWait) -> RunOptions {
        RunOptions {
            wait,
            full_refresh: false,
            reload_changed: false,
            backfill: None,
            invocation: Invocation::current(None, None),
            tick: None,
            run_id: None,
            engine: None,
            tenure: None,
            select: Vec::new(),
        }
    }
}
