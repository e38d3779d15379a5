//! How a run is asked to run: waiting for the pipeline's lock, what to recompute, and who
//! asks and why.

use chrono::{DateTime, Utc};

use crate::plan::Backfill;
use crate::records::lock::LockWait;
use crate::records::Invocation;
use crate::spec::Engine;

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
        }
    }
}
