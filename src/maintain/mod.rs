//! Keeping tables healthy over months of runs, beside `run`: whether every file a table
//! needs is there ([`check`]), and the files no snapshot references ([`orphans`]).

pub mod check;
pub mod orphans;

pub use check::{check, Problem, TableCheck};

pub use orphans::{
    delete_orphans_safely, find_orphans, DamagedTable, Orphan, Orphans, OutsideTable,
};
