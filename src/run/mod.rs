//! `pipeline run` and its backfills: one run of a pipeline end to end ([`run_pipeline`]: open,
//! execute every job in scope, audit, publish; see `pipeline.rs`), the scheduler's tick
//! ([`run_tick`]) and the record of a failed tick ([`record_failure`]).
//!
//! Guarantee: either every table of a run moves to its new snapshot in one catalog
//! transaction, or (on any error, in any job) none does. Data files written by a failed run
//! are never referenced by any table.

mod early_audit;
pub(crate) mod execute;
mod failed;
mod options;
mod pipeline;
mod report;
mod transform_job;
mod witness;

pub use crate::records::lock::{holder, lock_path, LockWait};
pub use failed::{record_failure, Failure};
pub use options::{RunOptions, Tenure};
pub use pipeline::{run_pipeline, run_tick, Served};
pub use report::RunReport;
pub use witness::Witness;
