//! `[maintenance]`: how `pipeline maintain` keeps a pipeline's tables healthy (Iceberg's
//! rewrite_data_files, rewrite_manifests and expire_snapshots, with their defaults), and
//! whether it runs by itself after every run.

use std::time::Duration;

/// A pipeline's `[maintenance]` (every key has a default; the section may be absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Maintenance {
    /// Compacted files are written at this size; `None`: each table's own target (its job's
    /// `target_file_size_mb`).
    pub target_file_size: Option<usize>,
    /// Files below this size are compaction candidates; `None`: 75 % of the target size.
    pub small_file_size: Option<usize>,
    /// A partition is compacted when it holds at least this many candidates (default 5).
    pub min_input_files: usize,
    /// Snapshots older than this expire (default 5 days) ...
    pub expire_older_than: Duration,
    /// ... except the newest `keep_last` of each table's history (default 1: the current one).
    pub keep_last: usize,
    /// The snapshots the newest `keep_runs` runs of the pipeline can be rolled back to are
    /// kept whatever their age (default 10), as are those of every run within
    /// `expire_older_than`: a weekly pipeline keeps its last runs' undo too.
    pub keep_runs: usize,
    /// A table whose current snapshot has more data manifests than this gets them rewritten
    /// into one (default 20).
    pub max_manifests: usize,
    /// Maintain the tables a run changed right after it publishes. `None` (the key absent):
    /// on where the catalog does not maintain tables itself, off where it does (S3 Tables);
    /// see [`Maintenance::after_run_on`].
    pub after_run: Option<bool>,
}

impl Default for Maintenance {
    fn default() -> Self {
        Maintenance {
            target_file_size: None,
            small_file_size: None,
            min_input_files: 5,
            expire_older_than: Duration::from_secs(5 * 86_400),
            keep_last: 1,
            keep_runs: 10,
            max_manifests: 20,
            after_run: None,
        }
    }
}

impl Maintenance {
    /// Whether runs maintain the tables they changed, on a catalog that maintains its tables
    /// itself (`catalog_maintains`) or not: the spec's `after_run`, else on exactly where the
    /// catalog does not (a year of nightly runs otherwise leaves small files, manifests and
    /// snapshots piling up).
    pub fn after_run_on(&self, catalog_maintains: bool) -> bool {
        self.after_run.unwrap_or(!catalog_maintains)
    }

    /// The size compacted files are written at, for a table whose job targets `job_target`.
    pub fn target_for(&self, job_target: usize) -> usize {
        self.target_file_size.unwrap_or(job_target)
    }

    /// The size below which a file is a compaction candidate, for a target of `target`.
    pub fn small_below(&self, target: usize) -> usize {
        self.small_file_size.unwrap_or(target / 4 * 3)
    }
}
