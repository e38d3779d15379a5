//! Run records: what each run (or rollback) changed. The embedded catalog stores them in its
//! SQLite database, in the same transaction as the table pointers they describe; remote
//! catalogs store them as rows of the control table `pipeline_meta.runs` (see `journal.rs`).
//! A record exists if and only if its run was published.

use serde::{Deserialize, Serialize};
use sqlx::sqlite::SqliteConnection;
use sqlx::Row;

use super::PipelineCatalog;
use crate::error::{Error, Result};

/// One table a run changed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TableRecord {
    pub table: String,
    /// `append` (ingest), `overwrite` (a full refresh), `replace_partitions`, `rollback` or
    /// `drop` (rollback of a created table).
    pub operation: String,
    /// The partitions replaced, e.g. `order_date_month in 2026-02..2026-03` (replace only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub partitions: Option<String>,
    /// `main` before the run; `None` when the run created the table.
    pub snapshot_before: Option<i64>,
    /// `main` after the run; `None` when the run dropped the table.
    pub snapshot_after: Option<i64>,
    /// Rows of the table after the run.
    pub rows: u64,
}

/// The durable record of one published run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub run_id: String,
    pub pipeline: String,
    /// `run`, `backfill` or `rollback`.
    pub kind: String,
    pub started_at: String,
    pub finished_at: String,
    /// For a rollback: the run it undid.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rolls_back: Option<String>,
    /// Who ran it, where, why, and the command line.
    #[serde(flatten)]
    pub invocation: crate::receipt::Invocation,
    /// The expectations evaluated on the run's tables, and what they found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quality: Vec<crate::quality::QualityResult>,
    /// The exact command that undoes this run.
    #[serde(default)]
    pub undo: String,
    pub tables: Vec<TableRecord>,
}

impl RunRecord {
    /// The command that undoes this run (records written before `undo` was stored get the
    /// plain form).
    pub fn undo_command(&self) -> String {
        if self.undo.is_empty() {
            format!("pipeline rollback {}", self.run_id)
        } else {
            self.undo.clone()
        }
    }
}

const CREATE: &str = "CREATE TABLE IF NOT EXISTS pipeline_runs (
    catalog_name VARCHAR(255) NOT NULL,
    run_id VARCHAR(255) NOT NULL,
    pipeline VARCHAR(255) NOT NULL,
    kind VARCHAR(16) NOT NULL,
    started_at VARCHAR(64) NOT NULL,
    finished_at VARCHAR(64) NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (catalog_name, run_id))";

/// Inserts `record` on `conn` (inside the publish transaction).
pub(super) async fn insert(
    conn: &mut SqliteConnection,
    catalog: &str,
    record: &RunRecord,
) -> Result<()> {
    sqlx::query(CREATE).execute(&mut *conn).await?;
    let json = serde_json::to_string(record)
        .map_err(|e| Error::Usage(format!("cannot encode the run record: {e}")))?;
    sqlx::query(
        "INSERT INTO pipeline_runs (catalog_name, run_id, pipeline, kind, started_at, finished_at, record) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(catalog)
    .bind(&record.run_id)
    .bind(&record.pipeline)
    .bind(&record.kind)
    .bind(&record.started_at)
    .bind(&record.finished_at)
    .bind(json)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

impl PipelineCatalog {
    /// Every run record of this catalog, oldest first.
    pub async fn runs(&self) -> Result<Vec<RunRecord>> {
        let Some(mut conn) = self.connect_sqlite().await? else {
            let remote = self.remote().expect("a catalog is embedded or remote");
            return super::journal::run_records(remote).await;
        };
        sqlx::query(CREATE).execute(&mut conn).await?;
        let rows = sqlx::query(
            "SELECT record FROM pipeline_runs WHERE catalog_name = ? ORDER BY finished_at, run_id",
        )
        .bind(&self.name)
        .fetch_all(&mut conn)
        .await?;
        rows.iter()
            .map(|r| {
                let text: String = r.get(0);
                serde_json::from_str(&text)
                    .map_err(|e| Error::Usage(format!("unreadable run record: {e}")))
            })
            .collect()
    }

    /// One run record.
    pub async fn run(&self, run_id: &str) -> Result<RunRecord> {
        self.runs()
            .await?
            .into_iter()
            .find(|r| r.run_id == run_id)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "no run `{run_id}` in this catalog; `pipeline runs` lists them"
                ))
            })
    }
}
