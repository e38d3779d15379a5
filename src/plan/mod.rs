//! What a run WILL do, decided before anything is written: the job graph of a pipeline
//! ([`graph`]), the checks of `pipeline validate` ([`validate`]), how much of each transform's
//! table a run recomputes ([`scope`]) and in which batches a full recompute runs ([`batches`]), what a backfill selects and would read ([`backfill`],
//! [`backfill_plan`]), the jobs `--select` names ([`select`]), the schema changes of the next run and whom they break (`pipeline plan`,
//! [`impact`]), and a pipeline's column lineage ([`lineage`]).

pub mod backfill;
pub mod backfill_plan;
pub mod batches;
pub mod graph;
pub mod impact;
pub mod lineage;
pub mod model_test;
pub mod readers;
pub mod run_plan;
mod schema_diff;
pub mod scope;
pub mod select;
pub mod validate;

pub use backfill::{jobs_in_scope, Backfill};
pub use backfill_plan::{plan_backfill, PlannedInput, PlannedTable};
pub use batches::{batch_rows, batches, Batch};
pub use graph::{job_graph, JobGraph, JobId};
pub use impact::{plan_changes, SchemaPlan};
pub use lineage::{lineage_of, lineage_roots, lineage_target};
pub use model_test::{run_model_tests, TestOutcome};
pub use readers::tables_read_by;
pub use run_plan::{plan_run, PlannedJob, RunRequest};
pub use scope::{decide, scope_properties, Forced, Scope};
pub use select::{select_jobs, Selector};
pub use validate::{validate, Validated};
