//! Where run records are kept. The embedded catalog stores them in its SQLite database (table
//! `pipeline_runs`), written in the same transaction as the table pointers they describe;
//! remote catalogs store them as rows of the control table `pipeline_meta.runs` (see
//! `control.rs`). A record exists if and only if its run was published.

use sqlx::sqlite::SqliteConnection;
use sqlx::Row;

use super::control;
use super::record::RunRecord;
use crate::catalog::PipelineCatalog;
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

/// A pipeline's records by finish time: what a scheduled tick, an audit's baseline and
/// maintenance look up (catalogs made before it get it on their next command).
const INDEX: &str = "CREATE INDEX IF NOT EXISTS pipeline_runs_by_pipeline \
    ON pipeline_runs (catalog_name, pipeline, finished_at)";

/// Creates the records table and its index where they are missing.
async fn ensure(conn: &mut SqliteConnection) -> Result<()> {
    sqlx::query(CREATE).execute(&mut *conn).await?;
    sqlx::query(INDEX).execute(&mut *conn).await?;
    Ok(())
}

/// Inserts `record` on `conn` (inside the publish transaction).
pub(crate) async fn insert(
    conn: &mut SqliteConnection,
    catalog: &str,
    record: &RunRecord,
) -> Result<()> {
    ensure(conn).await?;
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

/// Which run records to read. The embedded catalog answers each with one indexed SQL query
/// (so a command's cost does not grow with the years of records behind it); remote catalogs
/// read their control table and filter.
enum Which<'a> {
    All,
    Id(&'a str),
    /// The record of `pipeline` that holds scheduled tick `tick` (its key).
    Tick {
        pipeline: &'a str,
        tick: &'a str,
    },
    /// `pipeline`'s records finished at or after `since` (RFC 3339, as records write it).
    Since {
        pipeline: &'a str,
        since: &'a str,
    },
    /// Records of rollbacks that dropped a table (a table record with `dropped_metadata`).
    Dropping,
    /// `pipeline`'s records newest first: `limit` of them after the newest `offset`.
    Newest {
        pipeline: &'a str,
        offset: usize,
        limit: usize,
    },
}

impl Which<'_> {
    fn keeps(&self, r: &RunRecord) -> bool {
        match self {
            Which::All => true,
            Which::Id(id) => r.run_id == *id,
            Which::Tick { pipeline, tick } => {
                r.pipeline == *pipeline && r.tick.as_deref() == Some(*tick)
            }
            Which::Since { pipeline, since } => {
                r.pipeline == *pipeline && r.finished_at.as_str() >= *since
            }
            Which::Dropping => r.tables.iter().any(|t| t.dropped_metadata.is_some()),
            Which::Newest { pipeline, .. } => r.pipeline == *pipeline,
        }
    }
}

impl PipelineCatalog {
    /// Every run record of this catalog, oldest first.
    pub async fn runs(&self) -> Result<Vec<RunRecord>> {
        self.select_runs(Which::All).await
    }

    /// The records of rollbacks that dropped a table, oldest first: what keeps a dropped
    /// table's files for its undo. Read without parsing every other record (a year of nightly
    /// runs holds hundreds).
    pub async fn dropping_runs(&self) -> Result<Vec<RunRecord>> {
        self.select_runs(Which::Dropping).await
    }

    /// One run record.
    pub async fn run(&self, run_id: &str) -> Result<RunRecord> {
        self.find_run(run_id).await?.ok_or_else(|| {
            Error::Usage(format!(
                "no run `{run_id}` in this catalog; `pipeline runs` lists them"
            ))
        })
    }

    /// Run `run_id`'s record, if it was published.
    pub async fn find_run(&self, run_id: &str) -> Result<Option<RunRecord>> {
        Ok(self
            .select_runs(Which::Id(run_id))
            .await?
            .into_iter()
            .next())
    }

    /// The record of the run of `pipeline` that served scheduled tick `tick` (its RFC 3339
    /// key), if one was published.
    pub async fn run_for_tick(&self, pipeline: &str, tick: &str) -> Result<Option<RunRecord>> {
        Ok(self
            .select_runs(Which::Tick { pipeline, tick })
            .await?
            .into_iter()
            .next())
    }

    /// The latest scheduled tick (its RFC 3339 key) a record of `pipeline` holds.
    pub async fn last_tick(&self, pipeline: &str) -> Result<Option<String>> {
        let Some(mut conn) = self.connect_sqlite().await? else {
            return Ok(self
                .select_runs(Which::Newest {
                    pipeline,
                    offset: 0,
                    limit: usize::MAX,
                })
                .await?
                .into_iter()
                .filter_map(|r| r.tick)
                .max());
        };
        ensure(&mut conn).await?;
        let row = sqlx::query(
            "SELECT max(json_extract(record, '$.tick')) FROM pipeline_runs \
             WHERE catalog_name = ? AND pipeline = ?",
        )
        .bind(self.name())
        .bind(pipeline)
        .fetch_one(&mut conn)
        .await?;
        Ok(row.get::<Option<String>, _>(0))
    }

    /// `pipeline`'s run records finished at or after `since`, oldest first.
    pub async fn runs_since(
        &self,
        pipeline: &str,
        since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<RunRecord>> {
        let since = since.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        self.select_runs(Which::Since {
            pipeline,
            since: &since,
        })
        .await
    }

    /// The maintain runs that purged the erase `erase` (`pipeline erase --purge`), oldest
    /// first: what they expired and freed, per table.
    pub async fn purges_of(&self, erase: &RunRecord) -> Result<Vec<RunRecord>> {
        let since = chrono::DateTime::parse_from_rfc3339(&erase.finished_at)
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|e| {
                Error::Internal(format!(
                    "run {} has a bad finish time {}: {e}",
                    erase.run_id, erase.finished_at
                ))
            })?;
        Ok(self
            .runs_since(&erase.pipeline, since)
            .await?
            .into_iter()
            .filter(|r| r.purge_of.as_deref() == Some(erase.run_id.as_str()))
            .collect())
    }

    /// `pipeline`'s run records newest first: up to `limit` of them after skipping the newest
    /// `offset` (page through the history without reading all of it).
    pub async fn newest_runs(
        &self,
        pipeline: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<RunRecord>> {
        self.select_runs(Which::Newest {
            pipeline,
            offset,
            limit,
        })
        .await
    }

    async fn select_runs(&self, which: Which<'_>) -> Result<Vec<RunRecord>> {
        let Some(mut conn) = self.connect_sqlite().await? else {
            let remote = self
                .remote()
                .ok_or_else(|| Error::Internal("a catalog is embedded or remote".into()))?;
            let mut all: Vec<RunRecord> = control::run_records(remote)
                .await?
                .into_iter()
                .filter(|r| which.keeps(r))
                .collect();
            if let Which::Newest { offset, limit, .. } = which {
                all.reverse();
                all = all.into_iter().skip(offset).take(limit).collect();
            }
            return Ok(all);
        };
        ensure(&mut conn).await?;
        let mut sql = String::from("SELECT record FROM pipeline_runs WHERE catalog_name = ?");
        let mut binds: Vec<String> = vec![self.name().to_string()];
        let order = match &which {
            Which::All => " ORDER BY finished_at, run_id".to_string(),
            Which::Id(id) => {
                sql.push_str(" AND run_id = ?");
                binds.push(id.to_string());
                String::new()
            }
            Which::Dropping => {
                // Records serialize `dropped_metadata` only when a table was dropped.
                sql.push_str(" AND instr(record, '\"dropped_metadata\"') > 0");
                " ORDER BY finished_at, run_id".to_string()
            }
            Which::Tick { pipeline, tick } => {
                sql.push_str(" AND pipeline = ? AND json_extract(record, '$.tick') = ?");
                binds.extend([pipeline.to_string(), tick.to_string()]);
                " ORDER BY finished_at, run_id".to_string()
            }
            Which::Since { pipeline, since } => {
                sql.push_str(" AND pipeline = ? AND finished_at >= ?");
                binds.extend([pipeline.to_string(), since.to_string()]);
                " ORDER BY finished_at, run_id".to_string()
            }
            Which::Newest {
                pipeline,
                offset,
                limit,
            } => {
                sql.push_str(" AND pipeline = ?");
                binds.push(pipeline.to_string());
                // SQLite's LIMIT is a signed 64-bit number.
                let limit = i64::try_from(*limit).unwrap_or(i64::MAX);
                format!(" ORDER BY finished_at DESC, run_id DESC LIMIT {limit} OFFSET {offset}")
            }
        };
        sql.push_str(&order);
        let mut query = sqlx::query(&sql);
        for b in &binds {
            query = query.bind(b);
        }
        let rows = query.fetch_all(&mut conn).await?;
        rows.iter()
            .map(|r| {
                let text: String = r.get(0);
                serde_json::from_str(&text)
                    .map_err(|e| Error::Usage(format!("unreadable run record: {e}")))
            })
            .collect()
    }
}
