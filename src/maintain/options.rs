//! How `pipeline maintain` is asked to run ([`MaintainOptions`]): which tables, planned only,
//! what may expire, how long to wait for the locks, who asks and why.

use chrono::{DateTime, Utc};

use crate::commit::deletion::UNREFERENCED_MIN_AGE;
use crate::records::lock::LockWait;
use crate::records::Invocation;
use crate::spec::TableName;

/// How `pipeline maintain` is asked to run.
#[derive(Debug, Clone)]
pub struct MaintainOptions {
    /// Only these tables (each must be one the pipeline writes); `None`: all of them.
    pub tables: Option<Vec<TableName>>,
    /// Say what would be done; change nothing (no lock is taken).
    pub plan_only: bool,
    /// Also expire the snapshots kept for a reason: those recent run records can roll back to
    /// (their rollback stops working) and those transforms' next incremental runs read from
    /// (they recompute whole).
    pub expire_protected: bool,
    /// How long to wait for a run of the pipeline that holds its lock.
    pub wait: LockWait,
    pub invocation: Invocation,
    /// Maintenance after a run: snapshots past the window expire in batches, all tables
    /// together (see [`crate::commit::window_batch_due`]), and the tables' folders are searched for files
    /// nothing references only when an expiry freed some, so that a nightly run pays for a
    /// survey of the catalog every few runs, not each time.
    pub batch_expiry: bool,
    /// The moment snapshot ages are measured from (default: now).
    pub now: Option<DateTime<Utc>>,
    /// The erase this maintenance purges (`pipeline erase --purge`), named in its record.
    pub purge_of: Option<String>,
    /// Files in a table's folder that nothing references are deleted once this old (an hour:
    /// a younger one may be a writer's this project's locks do not hold off). A purge deletes
    /// younger ones too when a run of this engine named them (a killed run's data files), and
    /// lists the others it leaves.
    pub unreferenced_age: std::time::Duration,
}

impl MaintainOptions {
    /// Maintain every table of the pipeline, waiting up to `wait` for a run to finish.
    pub fn new(wait: LockWait) -> MaintainOptions {
        MaintainOptions {
            tables: None,
            plan_only: false,
            expire_protected: false,
            batch_expiry: false,
            wait,
            invocation: Invocation::current(None, None),
            now: None,
            purge_of: None,
            unreferenced_age: UNREFERENCED_MIN_AGE,
        }
    }
}
