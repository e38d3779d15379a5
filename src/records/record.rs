//! Run records: the durable receipt of every published run, backfill and rollback (what each
//! changed, snapshot ids before and after, the expectations evaluated, who ran it and why, and
//! the command that undoes it). They are stored with the publish itself (see
//! `runs.rs`): a record exists if and only if its run was published.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::receipt::Invocation;
use crate::spec::ExpectAction;

/// What published a run record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// `pipeline run`.
    Run,
    /// `pipeline backfill`.
    Backfill,
    /// `pipeline rollback`.
    Rollback,
    /// `pipeline maintain` (or `after_run` maintenance): compaction, manifest rewrite, expiry.
    Maintain,
    /// `pipeline sql`: a DELETE or UPDATE of rows, copy-on-write.
    Sql,
    /// `pipeline erase`: one subject's rows removed from every table that holds them.
    Erase,
    /// `pipeline env drop`: an environment's branches removed (`main` does not move).
    Env,
}

impl RunKind {
    /// The word records and messages use: `run`, `backfill`, `rollback`, `maintain`, `sql`, `erase`.
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Run => "run",
            RunKind::Backfill => "backfill",
            RunKind::Rollback => "rollback",
            RunKind::Maintain => "maintain",
            RunKind::Sql => "sql",
            RunKind::Erase => "erase",
            RunKind::Env => "env",
        }
    }
}

impl fmt::Display for RunKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// One table a run changed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TableRecord {
    pub table: String,
    /// `append` (ingest), `overwrite` (a full refresh), `replace_partitions`, `rewrite`,
    /// `rollback`, `drop` (rollback of a created table), `compact`, `rewrite_manifests` or
    /// `expire_snapshots` (maintenance; the snapshot does not move).
    pub operation: String,
    /// The partitions replaced, e.g. `month(order_date) in 2026-02..2026-03` (replace only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub partitions: Option<String>,
    /// `main` before the run; `None` when the run created the table.
    #[serde(with = "crate::id_text::option", default)]
    pub snapshot_before: Option<i64>,
    /// `main` after the run; `None` when the run dropped the table.
    #[serde(with = "crate::id_text::option", default)]
    pub snapshot_after: Option<i64>,
    /// Rows of the table after the run.
    pub rows: u64,
    /// Maintenance: the snapshots this run expired and the files only they referenced.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expired: Option<ExpiredFiles>,
    /// A rollback's `drop`: the table's last metadata file, from which the undo of the
    /// rollback registers the table back (its files are kept for it, see `commit::live`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dropped_metadata: Option<String>,
}

/// What expiring snapshots freed in one table, as recorded before the files go: the embedded
/// catalog and REST warehouses delete them right after the publish (a file that cannot be
/// deleted is left to `pipeline orphans`); S3 Tables deletes them itself, on its own schedule.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ExpiredFiles {
    /// Snapshots removed from the table's metadata.
    pub snapshots: u64,
    /// Data files no kept snapshot references, and their bytes.
    pub data_files: u64,
    pub data_bytes: u64,
    /// Every file freed: data files, manifests, manifest lists, metadata files.
    pub files: u64,
}

/// The durable record of one published run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub run_id: String,
    pub pipeline: String,
    pub kind: RunKind,
    pub started_at: String,
    pub finished_at: String,
    /// For a rollback: the run it undid.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rolls_back: Option<String>,
    /// Who ran it, where, why, and the command line.
    #[serde(flatten)]
    pub invocation: Invocation,
    /// The expectations evaluated on the run's tables, and what they found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quality: Vec<QualityResult>,
    /// The exact command that undoes this run.
    #[serde(default)]
    pub undo: String,
    /// The scheduled tick this run served (`pipeline schedule`), RFC 3339 in UTC: the key that
    /// makes a tick run at most once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<String>,
    /// Why the run failed (a scheduled one: after its retries): recorded with no tables, so
    /// `pipeline runs` shows the failure and a scheduled tick counts as served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A failed run: the jobs that had finished staging before it failed (nothing of theirs
    /// was published).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finished_jobs: Vec<FinishedJob>,
    /// The environment the run wrote to (`--env`): each table's snapshots before and after
    /// are those of its branch of that name; `main` did not move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    pub tables: Vec<TableRecord>,
    /// For an erase: the receipt (condition, rows and files per table, landing files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erase: Option<super::erase_receipt::EraseReceipt>,
    /// For the maintenance that `pipeline erase --purge` runs: the erase's run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_of: Option<String>,
}

/// A job that finished staging in a run that then failed: what it would have done.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FinishedJob {
    pub table: String,
    /// What the job did (`append`, `replace <partitions>`, `up to date`, ...).
    pub action: String,
    /// Rows it wrote (staged, never published).
    pub rows: u64,
}

/// What a failed run got done before it failed: the jobs that finished staging and the
/// checks evaluated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FailureTrail {
    pub finished_jobs: Vec<FinishedJob>,
    pub quality: Vec<QualityResult>,
}

/// The outcome of one expectation in one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QualityResult {
    pub name: String,
    pub table: String,
    pub check: String,
    /// `fail`, `warn` or `drop`.
    pub action: ExpectAction,
    pub passed: bool,
    /// Violating rows (for `row_count` and `freshness`: 0 or 1, see `detail`).
    pub violations: u64,
    /// What was found, in words.
    pub detail: String,
    /// Up to five violating rows, each an object of column -> value (text; null for NULL).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample: Vec<super::SampleRow>,
    /// What `volume` (rows) and `null_rate` (share of NULLs) measured: the baseline of later
    /// runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<f64>,
    /// The check as evaluated (its SQL), for row-level checks: a later run checks only the
    /// rows it writes when this is unchanged (the rows already published passed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// `written` when only the rows this run wrote were checked (see [`Self::rule`]); absent
    /// when the whole table was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl RunRecord {
    /// The record of run `run_id` of `pipeline`, a command of `kind` that started at `started`
    /// and was invoked as `invocation`: no tables and no checks yet, finished now. Its undo
    /// command names the pipeline and the catalog the command used.
    pub fn new(
        run_id: &str,
        kind: RunKind,
        pipeline: &str,
        started: DateTime<Utc>,
        invocation: &Invocation,
    ) -> RunRecord {
        RunRecord {
            run_id: run_id.to_string(),
            pipeline: pipeline.to_string(),
            kind,
            started_at: timestamp(started),
            finished_at: timestamp(crate::fault::wall_now()),
            rolls_back: None,
            undo: invocation.undo_command(run_id, pipeline),
            invocation: invocation.clone(),
            quality: Vec::new(),
            tick: None,
            error: None,
            finished_jobs: Vec::new(),
            env: None,
            tables: Vec::new(),
            erase: None,
            purge_of: None,
        }
    }

    /// This record as the run that served scheduled tick `tick`.
    pub fn serving(mut self, tick: DateTime<Utc>) -> RunRecord {
        self.tick = Some(tick_key(tick));
        self
    }

    /// This record as a run that failed with `error` (a scheduled one: for good) after
    /// `finished_jobs` had staged and `quality` was evaluated: no tables and nothing to undo.
    /// Any secret in `error` is redacted: records are shown by `runs`, `schedule status`, MCP
    /// and the docs site.
    pub fn failed(mut self, error: &str, trail: FailureTrail) -> RunRecord {
        self.error = Some(crate::secrets::redact(error).into_owned());
        self.finished_jobs = trail.finished_jobs;
        self.quality = trail.quality;
        self.tables.clear();
        self.undo.clear();
        self
    }

    /// Whether this records a failure (no table changed).
    pub fn is_failure(&self) -> bool {
        self.error.is_some()
    }

    /// This record as the undo of run `run_id`.
    pub fn rolling_back(mut self, run_id: &str) -> RunRecord {
        self.rolls_back = Some(run_id.to_string());
        self
    }

    /// This record with the results of the expectations evaluated on its tables.
    pub fn with_quality(mut self, quality: Vec<QualityResult>) -> RunRecord {
        self.quality = quality;
        self
    }

    /// A copy of this record finished now (the moment it is published).
    pub fn finished_now(&self) -> RunRecord {
        RunRecord {
            finished_at: timestamp(crate::fault::wall_now()),
            ..self.clone()
        }
    }

    /// This record with the tables the run changed. A run that changed no table is a no-op:
    /// it has nothing to undo, and no undo command.
    pub fn with_tables(mut self, tables: Vec<TableRecord>) -> RunRecord {
        self.tables = tables;
        if self.is_noop() {
            self.undo.clear();
        }
        self
    }

    /// A run that moved no table (everything was loaded, every table up to date; or a
    /// maintenance that only expired snapshots, which cannot be undone).
    pub fn is_noop(&self) -> bool {
        self.tables
            .iter()
            .all(|t| t.snapshot_before == t.snapshot_after)
    }

    /// The command that undoes this run (records written before `undo` was stored get the
    /// plain form); `None` for a no-op run and a run in an environment.
    pub fn undo_command(&self) -> Option<String> {
        // A run in an environment did not move main: there is nothing there to undo.
        if self.is_noop() || self.env.is_some() {
            None
        } else if self.undo.is_empty() {
            Some(format!("pipeline rollback {}", self.run_id))
        } else {
            Some(self.undo.clone())
        }
    }
}

/// A scheduled tick as run records key it: RFC 3339 in UTC, seconds.
pub fn tick_key(tick: DateTime<Utc>) -> String {
    tick.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// An instant as run records write it: RFC 3339 in UTC, milliseconds.
fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A new run id: UTC start time and 8 random hex digits, e.g. `20261130T031105Z-f678e367`.
/// Sorts by time.
pub fn new_run_id(started_at: DateTime<Utc>) -> String {
    format!(
        "{}-{}",
        started_at.format("%Y%m%dT%H%M%SZ"),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}
