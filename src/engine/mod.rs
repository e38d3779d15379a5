//! The query engine under every SQL the engine runs (transforms, expectations, `pipeline
//! query`): one place that builds DataFusion sessions, with the engine's own physical rule
//! (streaming `row_number()`), row counts for join planning, and readable error messages.
//! Choosing where queries execute (one machine, or a cluster) belongs here, so nothing above
//! knows.

mod message;
mod parquet_scan;
mod row_count;
mod session;
mod window_rule;

pub use message::clean_message;
pub use parquet_scan::table_provider;
pub use row_count::CountedTable;
pub use session::{
    new_session, register_table, return_freed_memory, session_over, DEFAULT_MEMORY_LIMIT_MB,
};
