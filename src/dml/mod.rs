//! Row changes outside a run: `pipeline sql "DELETE ..."` / `"UPDATE ..."` ([`change_rows`],
//! see `row_change.rs`), on the copy-on-write row rewriter that `pipeline erase` uses too
//! ([`rewrite_rows`]).
//!
//! Guarantee: a change publishes one `overwrite` snapshot per table with a run record of kind
//! `sql` (undoable by `pipeline rollback`), or changes nothing.

pub mod rewrite_rows;
mod row_change;

pub use row_change::{change_rows, parse_row_change, ParsedChange, RowChange, RowEdit};
