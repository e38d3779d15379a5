//! Where run records are kept. The embedded catalog stores them in its SQLite database (table
//! `pipeline_runs`), written in the same transaction as the table pointers they describe;
//! remote catalogs store them as rows of the control table `pipeline_meta.runs` (see
//! `control.rs`). A record exists if and only if its run was published.

use sqlx::sqlite::SqliteConnection;
use sqlx::Row;

use super::connection::PipelineCatalog;
use super::control;
use super::record::RunRecord;
use crate::error::{Error, Result};

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
pub(crate) async fn insert(
    conn: &mut SqliteConnection,
    catalog: &str,
    record: &RunRecord,
) -> Result<()> {
    sqlx::query(CREATE).execute(&mut *conn).await?;
    let json = serde_json::to_string(record)
        .map_err(|e| Error::Internal(format!("cannot encode the run record: {e}")))?;
    sqlx::query(
        "INSERT INTO pipeline_runs (catalog_name, run_id, pipeline, kind, started_at, finished_at, record) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(catalog)
    .bind(&record.run_id)
    .bind(&record.pipeline)
    .bind(record.kind.name())
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
            let remote = self
                .remote()
                .ok_or_else(|| Error::Internal("a catalog is embedded or remote".into()))?;
            return control::run_records(remote).await;
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
