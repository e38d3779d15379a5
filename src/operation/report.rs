//! What a table-changing command tells while it works ([`Observer`]) and what each job of a
//! run did ([`JobReport`]).

use std::fmt;

use serde::{Serialize, Serializer};

use crate::commit::JobKind;
use crate::ingest::{FileStats, IngestOutcome};
use crate::plan::Scope;
use crate::records::QualityResult;
use crate::spec::TableName;

/// What a job did to its table.
#[derive(Debug, Clone, PartialEq)]
pub enum JobAction {
    /// Ingest: every source file was loaded before; no new snapshot.
    NothingNew,
    /// Ingest: new rows appended; `reloaded` changed files were loaded again (with
    /// `--reload-changed`), their `replaced_rows` old rows removed; `added_columns` joined the
    /// table (`schema_evolution = "add_columns"`).
    Append {
        reloaded: usize,
        replaced_rows: u64,
        added_columns: Vec<String>,
    },
    /// Transform: what its scope made it do (up to date, a full refresh, a replace).
    Transform(Scope),
}

impl fmt::Display for JobAction {
    /// `nothing new`, `append`, `append; 2 changed file(s) reloaded, 10 old rows replaced;
    /// columns added: coupon`, `up to date`, `full refresh (why)`, `replace <partitions>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobAction::NothingNew => f.write_str("nothing new"),
            JobAction::Append {
                reloaded,
                replaced_rows,
                added_columns,
            } => {
                f.write_str("append")?;
                if *reloaded > 0 {
                    write!(
                        f,
                        "; {reloaded} changed file(s) reloaded, {replaced_rows} old rows replaced"
                    )?;
                }
                if !added_columns.is_empty() {
                    write!(f, "; columns added: {}", added_columns.join(", "))?;
                }
                Ok(())
            }
            JobAction::Transform(scope) => f.write_str(&scope.describe()),
        }
    }
}

impl Serialize for JobAction {
    /// As its text (see [`fmt::Display`]), the form `--json` reports have always had.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

/// What one job did.
#[derive(Debug, Clone, Serialize)]
pub struct JobReport {
    pub job: JobKind,
    pub table: String,
    /// Source records (ingest) or rows of the input tables (transform).
    pub rows_in: u64,
    pub rows_out: u64,
    pub quarantined: u64,
    /// Data files written.
    pub files: u64,
    pub bytes: u64,
    /// The table's snapshot after the run (unchanged when the job had nothing new).
    #[serde(with = "crate::id_text")]
    pub snapshot_id: i64,
    /// Source files skipped because the table already loaded them (ingest only).
    pub already_loaded: usize,
    /// What the job did to its table.
    pub action: JobAction,
    pub seconds: f64,
    /// Per source file counts (ingest only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<FileStats>,
    /// Where a transform that ran executed: `local`, or `ballista at df://HOST:PORT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
}

impl JobReport {
    /// The report of an ingest job that took `seconds`.
    pub fn ingest(o: &IngestOutcome, seconds: f64) -> JobReport {
        let new = o.staged.as_ref();
        JobReport {
            job: JobKind::Ingest,
            table: o.table.to_string(),
            rows_in: o.records(),
            rows_out: new.map_or(0, |s| s.added_rows - o.rewritten_rows),
            quarantined: o.quarantined(),
            files: new.map_or(0, |s| s.added_files),
            bytes: new.map_or(0, |s| s.added_bytes),
            snapshot_id: new
                .map(|s| s.snapshot_id)
                .or(o.current_snapshot)
                .unwrap_or_default(),
            already_loaded: o.already_loaded,
            action: match new {
                None => JobAction::NothingNew,
                Some(_) => JobAction::Append {
                    reloaded: o.reloaded,
                    replaced_rows: o.replaced_rows,
                    added_columns: o.added_columns.clone(),
                },
            },
            seconds,
            sources: o.files.clone(),
            engine: None,
        }
    }

    /// The report of a transform job on `table` that took `seconds` and did `scope`; nothing
    /// counted yet (an up-to-date table at `snapshot`).
    pub fn transform(table: &TableName, scope: Scope, snapshot: Option<i64>, seconds: f64) -> Self {
        JobReport {
            job: JobKind::Transform,
            table: table.to_string(),
            rows_in: 0,
            rows_out: 0,
            quarantined: 0,
            files: 0,
            bytes: 0,
            snapshot_id: snapshot.unwrap_or_default(),
            already_loaded: 0,
            action: JobAction::Transform(scope),
            seconds,
            sources: Vec::new(),
            engine: None,
        }
    }
}

/// Receives progress while a run works.
pub trait Observer: Send + Sync {
    fn job_started(&self, _job: JobKind, _table: &TableName) {}
    fn job_progress(&self, _table: &TableName, _rows: u64, _seconds: f64) {}
    fn job_finished(&self, _report: &JobReport) {}
    fn publishing(&self, _tables: usize) {}
    /// Another writer moved `table` since this run read it; the run's snapshot is being
    /// produced again on top of it (attempt `attempt`).
    fn rebasing(&self, _table: &TableName, _attempt: u32) {}
    /// Another run of the pipeline holds the lock; this run waits for it.
    fn waiting_for(&self, _holder: &str) {}
    /// A publish an earlier command left half done was completed or undone first.
    fn recovered(&self, _what: &str) {}
    /// An expectation was evaluated on a staged table.
    fn checked(&self, _result: &QualityResult) {}
    /// Maintenance is working on `table` (e.g. "compacting 40 files in 3 partition(s)").
    fn maintaining(&self, _table: &TableName, _what: &str) {}
    /// A command is about to do something a person should know of first (a rollback that
    /// drops tables names them).
    fn warning(&self, _what: &str) {}
}

/// An observer that shows nothing.
pub struct Silent;
impl Observer for Silent {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_reports_have_always_written_them() {
        let append = |reloaded, columns: &[&str]| JobAction::Append {
            reloaded,
            replaced_rows: 7,
            added_columns: columns.iter().map(|c| c.to_string()).collect(),
        };
        assert_eq!(append(0, &[]).to_string(), "append");
        assert_eq!(
            append(2, &["coupon"]).to_string(),
            "append; 2 changed file(s) reloaded, 7 old rows replaced; columns added: coupon"
        );
        assert_eq!(JobAction::NothingNew.to_string(), "nothing new");
        assert_eq!(
            JobAction::Transform(Scope::UpToDate).to_string(),
            "up to date"
        );
        assert_eq!(
            serde_json::to_value(JobAction::Transform(Scope::Full("new table".into()))).unwrap(),
            "full refresh (new table)"
        );
        assert_eq!(serde_json::to_value(JobKind::Ingest).unwrap(), "ingest");
    }
}
