//! What every job of a run shares: the catalog, the run's identity and its start time.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::catalog::PipelineCatalog;

/// Run-wide values every job needs.
pub struct JobContext {
    pub catalog: Arc<PipelineCatalog>,
    pub project_dir: PathBuf,
    pub pipeline: String,
    pub run_id: String,
    /// Run start, microseconds since the epoch (the `_ingested_at` of every row).
    pub started_at_micros: i64,
    /// A loaded source file whose content changed is loaded again, its old rows removed
    /// (instead of stopping the run).
    pub reload_changed: bool,
}

impl JobContext {
    /// Snapshot summary properties recorded with every table this run writes.
    pub fn snapshot_properties(&self, job_kind: &str) -> HashMap<String, String> {
        HashMap::from([
            ("pipeline.name".to_string(), self.pipeline.clone()),
            ("pipeline.run-id".to_string(), self.run_id.clone()),
            ("pipeline.job".to_string(), job_kind.to_string()),
        ])
    }
}

/// A new run id: UTC start time and 8 random hex digits, e.g. `20261130T031105Z-f678e367`.
/// Sorts by time.
pub fn new_run_id(started_at: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "{}-{}",
        started_at.format("%Y%m%dT%H%M%SZ"),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}
