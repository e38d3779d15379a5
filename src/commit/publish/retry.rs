//! Optimistic concurrency at publish: a run's staged tables are published with its record; when
//! another writer moved some of those tables first, each such table is rebased onto the new
//! state (see `rebase.rs`) and the publish is tried again, a few times with backoff, or the run
//! fails with a conflict that names the table and publishes nothing.

use std::time::Duration;

use super::per_catalog::publisher;
use super::publication::{Publication, PublishOutcome, TableChange};
use super::rebase::rebase;
use crate::catalog::PipelineCatalog;
use crate::commit::expire::expire_snapshots;
use crate::commit::staged::StagedTable;
use crate::error::{Error, Result};
use crate::records::RunRecord;
use crate::spec::TableName;

/// Publish attempts before a run gives up on a table other writers keep moving.
pub const ATTEMPTS: u32 = 5;

/// Publishes every table of `staged` at once, with `record` (its tables and finish time filled
/// in at each attempt), or none. With `max_snapshots`, each table's oldest snapshots beyond it
/// expire in the same commit. `on_rebase(table, attempt)` is told of each table rebased after a
/// conflict. Returns the tables as published (rebased ones included).
pub async fn publish_with_retry(
    catalog: &PipelineCatalog,
    mut staged: Vec<StagedTable>,
    record: &RunRecord,
    max_snapshots: Option<usize>,
    on_rebase: &(dyn Fn(&TableName, u32) + Send + Sync),
) -> Result<Vec<StagedTable>> {
    let publisher = publisher(catalog);
    for attempt in 1..=ATTEMPTS {
        // The record is stamped before old snapshots expire: it finished when the run was
        // ready to publish.
        let stamped = record.finished_now();
        if let Some(keep) = max_snapshots {
            for table in staged.iter_mut() {
                expire_snapshots(table, keep, catalog.file_io()).await?;
            }
        }
        let tables = staged.iter().map(|t| t.table_record()).collect();
        let mut publication = Publication {
            record: Some(stamped.with_tables(tables)),
            ..Publication::default()
        };
        for table in &staged {
            publication
                .changes
                .push(TableChange::publish(table.clone())?);
        }
        let conflicts = match publisher.try_publish(&publication).await? {
            PublishOutcome::Published(_) => return Ok(staged),
            PublishOutcome::Conflicts(conflicts) => conflicts,
        };
        if attempt == ATTEMPTS {
            return Err(Error::Conflict {
                table: staged[conflicts[0]].table.to_string(),
                message: format!(
                    "other writers kept committing to it; gave up after {ATTEMPTS} attempts"
                ),
            });
        }
        for i in conflicts {
            tracing::info!(table = %staged[i].table, attempt, "another writer moved the table; rebasing");
            on_rebase(&staged[i].table, attempt);
            staged[i] = rebase(catalog, &staged[i]).await?;
        }
        let backoff = 50u64 << attempt;
        let jitter = uuid::Uuid::new_v4().as_u128() as u64 % backoff;
        tokio::time::sleep(Duration::from_millis(backoff + jitter)).await;
    }
    Err(Error::Internal(format!(
        "publishing gave up after {ATTEMPTS} attempts without a conflict to report"
    )))
}
