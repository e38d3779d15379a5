//! What a run did ([`RunReport`]): its jobs, the expectations checked, what maintenance after
//! it did.

use serde::Serialize;

use crate::maintain::MaintainReport;
use crate::operation::JobReport;
use crate::records::QualityResult;

/// What a run did.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub pipeline: String,
    pub started_at: String,
    pub seconds: f64,
    /// Every table of the run was published in one catalog transaction.
    pub published: bool,
    /// The tables published (job outputs and quarantine tables), sorted.
    pub tables: Vec<String>,
    pub jobs: Vec<JobReport>,
    /// The expectations evaluated on this run's tables.
    pub quality: Vec<QualityResult>,
    /// `[maintenance] after_run`: what maintaining the run's tables did, or why it failed
    /// (the run is published either way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintainReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance_error: Option<String>,
}
