//! Keeping tables healthy over months of runs, beside `run`: today the files no snapshot
//! references ([`orphans`]).

pub mod orphans;

pub use orphans::{delete_orphans, find_orphans, Orphan};
