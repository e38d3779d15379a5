//! What a run got done before it failed: an [`Observer`] that passes every event on and keeps
//! the jobs that finished staging and the checks evaluated, for the failed run's record.

use std::sync::{Arc, Mutex};

use crate::commit::JobKind;
use crate::operation::{JobReport, Observer};
use crate::records::{FailureTrail, FinishedJob, QualityResult};
use crate::spec::TableName;

/// Passes every event to the observer it wraps and remembers the finished jobs and the
/// checks. Guarantee: [`Witness::trail`] holds every job report and check result the run told,
/// in the order told.
pub struct Witness {
    inner: Arc<dyn Observer>,
    seen: Mutex<FailureTrail>,
}

impl Witness {
    /// A witness of a run that tells `inner` as it goes.
    pub fn new(inner: Arc<dyn Observer>) -> Arc<Witness> {
        Arc::new(Witness {
            inner,
            seen: Mutex::new(FailureTrail::default()),
        })
    }

    /// What the run told so far.
    pub fn trail(&self) -> FailureTrail {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Observer for Witness {
    fn job_started(&self, job: JobKind, table: &TableName) {
        self.inner.job_started(job, table)
    }
    fn job_progress(&self, table: &TableName, rows: u64, seconds: f64) {
        self.inner.job_progress(table, rows, seconds)
    }
    fn job_finished(&self, report: &JobReport) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.finished_jobs.push(FinishedJob {
                table: report.table.clone(),
                action: report.action.to_string(),
                rows: report.rows_out,
            });
        }
        self.inner.job_finished(report)
    }
    fn publishing(&self, tables: usize) {
        self.inner.publishing(tables)
    }
    fn rebasing(&self, table: &TableName, attempt: u32) {
        self.inner.rebasing(table, attempt)
    }
    fn waiting_for(&self, holder: &str) {
        self.inner.waiting_for(holder)
    }
    fn recovered(&self, what: &str) {
        self.inner.recovered(what)
    }
    fn checked(&self, result: &QualityResult) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.quality.push(result.clone());
        }
        self.inner.checked(result)
    }
    fn maintaining(&self, table: &TableName, what: &str) {
        self.inner.maintaining(table, what)
    }
    fn warning(&self, what: &str) {
        self.inner.warning(what)
    }
}
