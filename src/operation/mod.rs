//! The skeleton every table-changing command runs on (`pipeline run` and its backfills,
//! `erase`, `rollback`, `sql` DML, `maintain`, a failed tick's record): one function,
//! [`operate`], takes the locks, recovers a half-done publish, stages, audits, records and
//! publishes with retries, in that order; a command says only what to stage and how to
//! describe its record ([`TableOperation`]). Beside it: the locks and recovery ([`open`]), the
//! audit of staged tables ([`audit`]), the publish of job-staged tables ([`StagedTables`]) and
//! what a command tells while it works ([`Observer`], [`JobReport`]).
//!
//! Guarantee: a command that changes tables holds its pipeline's run lock (keyed by
//! `[pipeline] name`) from before it reads any table until its publish is done, and publishes
//! every change with its record in one catalog commit, or nothing.

pub mod audit;
pub mod open;
mod report;
mod skeleton;
mod staged_tables;

pub use open::{Held, Scope};
pub use report::{JobAction, JobReport, Observer, Silent};
pub use skeleton::{
    operate, CatalogRef, Identity, Opened, Opening, RunStart, Staging, TableOperation, ToAudit,
};
pub use staged_tables::StagedTables;
