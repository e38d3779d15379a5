//! The query engine under every SQL the engine runs (transforms, expectations, `pipeline
//! query`): one place that builds DataFusion sessions, with the engine's own physical rule
//! (streaming `row_number()`), row counts for join planning, and readable error messages.
//! Queries on a Ballista cluster get their sessions from `crate::cluster`, which builds on
//! this module's rule and its checks of what a plain Parquet scan reads correctly.

mod case_views;
mod file_io_store;
mod freed_memory;
mod gate;
mod message;
mod native_files;
mod node_stores;
mod parquet_scan;
mod remote_files;
mod row_count;
mod session;
mod sql_lines;
mod tail_reader;
mod window_rule;

pub use freed_memory::return_freed_memory;
pub use gate::{
    admit, admit_expression, expression, plan, plan_expression, query, Admitted, Entry, Refusal,
    MAX_NESTING, MAX_SQL_BYTES,
};
pub use message::clean_message;
pub use native_files::{local_url, native_path, read_by_name_refusal};
pub use node_stores::NodeStores;
pub use parquet_scan::table_provider;
pub use remote_files::{remote_files, remote_scheme};
pub use row_count::CountedTable;
pub use session::{
    memory_limit_mb, new_session, node_runtime_env, register_table, runtime_env, session_over,
    set_memory_limit_mb, DEFAULT_MEMORY_LIMIT_MB, WORKER_STACK_BYTES,
};
pub use sql_lines::{line_naming, line_of_quoted_name, lines_naming};
pub use window_rule::{SortedRowNumberExec, StreamingRowNumber};
