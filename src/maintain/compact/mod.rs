//! Snapshots that change no row, for `pipeline maintain`: **compaction** (Iceberg's
//! rewrite_data_files: per partition, small files bin-packed into files of the target size)
//! and **manifest rewrite** (Iceberg's rewrite_manifests). Both are `replace` snapshots: a
//! reader sees the same rows before and after, and later runs step over them (see
//! `commit/replaced.rs`).
//!
//! Which files: [`select`] (pure: live files of the current snapshot, grouped by partition).
//! Rewriting them: [`rewrite`] (streams each group through iceberg's Arrow reader into a
//! table writer; the rows read must equal the rows the files hold, or nothing is staged).

mod rewrite;
mod select;

pub use rewrite::{compact, Compacted};
pub use select::{select, CompactionPlan, Group, Sizes};
