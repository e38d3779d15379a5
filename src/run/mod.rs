//! One run of a pipeline, end to end ([`run_pipeline`]: open, execute, audit, publish; see
//! `pipeline.rs`), and its undo ([`rollback`]), which shares the run's first step (the run lock
//! and the recovery of a half-done publish).
//!
//! Guarantee: either every table of a run moves to its new snapshot in one catalog
//! transaction, or (on any error, in any job) none does. Data files written by a failed run
//! are never referenced by any table.

mod audit;
mod erase;
mod erase_raw;
mod erase_sources;
mod execute;
mod failed;
mod maintain;
mod maintain_delete;
mod maintain_publish;
mod maintenance;
mod open;
mod options;
mod pipeline;
mod purge;
mod report;
mod rewrite_rows;
mod rollback;
mod row_change;
mod transform_job;

pub use crate::records::lock::{holder, lock_path, LockWait};
pub use erase::{erase, EraseReport, EraseRequest};
pub use failed::record_failure;
pub use maintain::{maintain_pipeline, MaintainOptions};
pub use maintenance::{MaintainReport, TableMaintenance};
pub use options::RunOptions;
pub use pipeline::{run_pipeline, run_tick, Served};
pub use report::{JobAction, JobReport, Observer, RunReport, Silent};
pub use rollback::{rollback, Reversal, RollbackReport};
pub use row_change::{change_rows, parse_row_change, ParsedChange, RowChange, RowEdit};
