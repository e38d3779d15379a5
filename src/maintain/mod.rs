//! `pipeline maintain` and everything it does to keep tables healthy over months of runs, as
//! one recorded operation: what to do per table and the command's steps ([`command`]:
//! compaction, manifest rewrite, snapshot expiry), small files compacted ([`compact`]), the
//! one publish of every table with its record ([`publish`]), the files only expired snapshots
//! referenced ([`unreferenced`]) deleted afterwards ([`delete`]), and what it reports
//! ([`report`]). Beside it: whether every file a table needs is there ([`check`]), the files
//! no snapshot references ([`orphans`]), and whether tables need maintenance now ([`due`]).
//!
//! Guarantee: a maintenance publishes all of its tables' new snapshots and its record in one
//! catalog commit, or none; a file is deleted only after that commit, through the one deletion
//! path (`commit::deletion`), and only when no snapshot still referenced needs it.

pub mod check;
mod command;
pub mod compact;
mod delete;
mod due;
mod options;
pub mod orphans;
mod plan;
mod publish;
mod report;
mod unreferenced;

pub use check::{check, Problem, TableCheck};
pub use command::maintain_pipeline;
pub(crate) use command::{after_run, maintain_locked};
pub use due::{due, Due};
pub use options::MaintainOptions;
pub use orphans::{
    delete_orphans_safely, find_orphans, DamagedTable, Orphan, Orphans, OutsideTable,
};
pub use report::{MaintainReport, TableMaintenance};
pub use unreferenced::{unreferenced_files, Unreferenced};
