//! What every job of a run is given to produce its staged snapshots: the catalog, the run's
//! identity and its start time.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use super::summary;
use crate::catalog::PipelineCatalog;

/// The two kinds of job a pipeline has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    /// Source files into a bronze table.
    Ingest,
    /// A SQL `SELECT` into a silver or gold table.
    Transform,
}

impl JobKind {
    /// `ingest` or `transform`, as reports and snapshot summaries write it.
    pub fn name(self) -> &'static str {
        match self {
            JobKind::Ingest => "ingest",
            JobKind::Transform => "transform",
        }
    }
}

impl fmt::Display for JobKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

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
    pub fn snapshot_properties(&self, job: JobKind) -> HashMap<String, String> {
        HashMap::from([
            (summary::PIPELINE.to_string(), self.pipeline.clone()),
            (summary::RUN_ID.to_string(), self.run_id.clone()),
            (summary::JOB.to_string(), job.name().to_string()),
        ])
    }
}
