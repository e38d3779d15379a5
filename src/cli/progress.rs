//! Progress on stderr while a command works: a line per job start and end, row counts of long
//! jobs, each check's verdict, conflicts, waits and recoveries.

use crate::commit::JobKind;
use crate::operation::{JobAction, JobReport, Observer};
use crate::plan::Scope;
use crate::records::QualityResult;
use crate::spec::{ExpectAction, TableName};

/// Progress on stderr: a line per job start and end, and row counts of long jobs.
pub struct Progress {
    /// stderr is a terminal.
    pub tty: bool,
}

impl Progress {
    /// Progress for this process's stderr.
    pub fn stderr() -> Progress {
        use std::io::IsTerminal;
        Progress {
            tty: std::io::stderr().is_terminal(),
        }
    }
}

impl Observer for Progress {
    fn job_started(&self, job: JobKind, table: &TableName) {
        tell!("  started   {job:<9} {table}");
    }
    fn job_progress(&self, table: &TableName, rows: u64, seconds: f64) {
        let _ = self.tty;
        tell!("  running   {table}: {rows} rows after {seconds:.0}s");
    }
    fn job_finished(&self, r: &JobReport) {
        if r.job == JobKind::Ingest && r.rows_in == 0 && r.already_loaded > 0 {
            tell!(
                "  finished  ingest    {}: nothing new ({} files already loaded)",
                r.table,
                r.already_loaded
            );
            return;
        }
        if r.action == JobAction::Transform(Scope::UpToDate) {
            tell!(
                "  finished  transform {}: up to date (inputs and SQL unchanged)",
                r.table
            );
            return;
        }
        tell!(
            "  finished  {:<9} {}: {}; {} rows in, {} rows out, {} quarantined, {} files, {} bytes, {:.2}s",
            r.job, r.table, r.action, r.rows_in, r.rows_out, r.quarantined, r.files, r.bytes, r.seconds
        );
    }
    fn recovered(&self, what: &str) {
        tell!("  recovered {what}");
    }
    fn checked(&self, r: &QualityResult) {
        let verdict = match (r.passed, r.action) {
            (true, _) => "passed",
            (false, ExpectAction::Warn) => "WARNING",
            (false, ExpectAction::Drop) => "rows dropped",
            (false, ExpectAction::Fail) => "FAILED",
        };
        tell!(
            "  check     {} {}: {verdict} ({})",
            r.table,
            r.name,
            r.detail
        );
        if !r.passed && r.action == ExpectAction::Warn {
            for row in &r.sample {
                tell!("              {row}");
            }
        }
    }
    fn rebasing(&self, table: &TableName, attempt: u32) {
        tell!("  conflict  {table}: another writer committed first; rebasing (attempt {attempt})");
    }
    fn warning(&self, what: &str) {
        tell!("  warning   {what}");
    }
    fn waiting_for(&self, holder: &str) {
        tell!("  waiting   another run of this pipeline is in progress ({holder})");
    }
    fn maintaining(&self, table: &TableName, what: &str) {
        tell!("  maintain  {table}: {what}");
    }
    fn publishing(&self, tables: usize) {
        tell!("  publishing {tables} tables");
    }
}
