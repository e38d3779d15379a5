//! Transforms: one DataFusion SQL `SELECT` per job, reading only catalog tables.
//!
//! [`parse_transform`] checks the SQL is exactly one query and finds the tables it reads;
//! [`logical_plan`] plans it against registered tables; [`run_transform`] streams the result
//! into a staged full refresh or partition replace. Where the query runs is the session's
//! business ([`crate::engine`], or [`crate::cluster`] for a Ballista cluster): the transform
//! only learns whether its writers are this process's tasks or the cluster's.

mod drop;
mod logical;
mod parse;
mod range_filter;
mod run;
mod write_out;

pub use drop::{quarantine_columns as transform_quarantine_columns, tag_violations};
pub use logical::{logical_plan, output_columns, sorts_all_rows};
pub use parse::{parse_transform, ParsedTransform};
pub use range_filter::{null_predicate, range_predicate};
pub use run::{run_transform, Query, TransformFacts, TransformOutcome};
