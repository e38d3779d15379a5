//! The skeleton every table-changing command runs on: the run lock taken and a half-done
//! publish resolved ([`open`]), the expectations audited on what was staged ([`audit`]), and
//! what a command tells while it works ([`Observer`], [`JobReport`]).
//!
//! Guarantee: a command that changes tables holds its pipeline's run lock (keyed by
//! `[pipeline] name`) from before it reads any table until its publish is done.

pub mod audit;
pub mod open;
mod report;

pub use report::{JobAction, JobReport, Observer, Silent};
