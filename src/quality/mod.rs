//! Audits: a run's expectations (`[[expect]]`), evaluated with DataFusion on the snapshots the
//! run staged, before anything is published (write, audit, publish). A `fail` expectation that
//! finds violations stops the run and nothing is published; a `warn` one is reported and
//! recorded. Expectations on tables the run did not change are not evaluated (they were when
//! those tables last changed).

mod anomaly;
mod audit;
mod check_sql;
mod distinct_keys;
mod history;
mod key_ranges;
mod query;
mod results;

pub use anomaly::Baselines;
pub use audit::{audit, AuditContext};
pub use check_sql::check_expectations;
pub use history::AuditHistory;
pub use results::{dropped_result, first_failure, summary};
