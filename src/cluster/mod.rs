//! Transforms on an Apache DataFusion Ballista cluster, with the same specs and the same
//! commits as on one machine. The driver (the `pipeline run` process) plans each input's
//! files with iceberg and registers them as plain Parquet listing tables ([`cluster_table`]),
//! plans the transform's SQL in a Ballista client session ([`cluster_session`]) and sends it
//! with the write on top ([`write_on_cluster`]): the scheduler plans it, executors read the
//! files, run the query and write the table's data files with the engine's own writer, and
//! only the files' entries come back. The driver stages, audits and publishes them as always.
//!
//! The scheduler and executors are Ballista's own libraries, started by `pipeline scheduler`
//! and `pipeline executor` ([`run_scheduler`], [`run_executor`]) with the engine's codecs
//! (its write and its streaming `row_number()` cross the wire).

mod codec;
mod files;
mod planner;
mod process;
mod scan;
mod session;
mod write_exec;
mod write_node;

pub use process::{run_executor, run_scheduler, ExecutorOptions, SchedulerOptions};
pub use scan::cluster_table;
pub use session::{cluster_session, write_on_cluster};
pub use write_node::ClusterWrite;
