//! The publisher of REST catalogs that offer multi-table commits: every table of a run and its
//! run record (a row appended to the control table `pipeline_meta.runs`) in ONE
//! `POST /v1/{prefix}/transactions/commit`, all or nothing.

use std::sync::Arc;

use async_trait::async_trait;
use iceberg::spec::TableMetadata;

use super::intent::{intent_of, refuse_a_served_tick, stage_control};
use super::publication::{locations, versions_of, Publication, PublishOutcome, Publisher};
use super::recover::resolve;
use crate::catalog::{moved_since, Committed, Current, MultiTableCommit, RemoteCatalog, TableMove};
use crate::error::{Error, Result};
use crate::fault::pause_point;
use crate::records::{control_name, control_table, RunRecord};

/// How many times the commit is sent again when only the control table moved meanwhile
/// (another pipeline's record).
const ATTEMPTS: usize = 5;

/// One multi-table commit per run: every table and the run record, or nothing.
pub struct TransactionPublisher {
    pub remote: Arc<RemoteCatalog>,
    pub commit: Arc<dyn MultiTableCommit>,
}

#[async_trait]
impl Publisher for TransactionPublisher {
    async fn try_publish(&self, publication: &Publication) -> Result<PublishOutcome> {
        let remote = &self.remote;
        let mut versions = Vec::with_capacity(publication.changes.len());
        for change in &publication.changes {
            let (_, base, new) = versions_of(remote, change).await?;
            versions.push((base, new));
        }
        let control = control_name();
        // Every table's change is checked before the control table is touched.
        let tables: Vec<TableMove> = publication
            .changes
            .iter()
            .zip(&versions)
            .map(|(change, (base, new))| TableMove {
                table: &change.table,
                base,
                new,
            })
            .collect();
        self.commit.check(&tables)?;
        for attempt in 0..ATTEMPTS {
            let record = match &publication.record {
                Some(record) => Some(control_with_record(remote, record).await?),
                None => None,
            };
            let mut moves = tables.clone();
            if let Some((current, new)) = &record {
                moves.push(TableMove {
                    table: &control,
                    base: &current.metadata,
                    new,
                });
            }
            pause_point("publishing");
            match self.commit.commit_all(&moves).await? {
                Committed::All => {
                    return Ok(PublishOutcome::Published(
                        locations(remote, &publication.changes).await?,
                    ));
                }
                Committed::Conflict(message) => {
                    tracing::info!(
                        "the catalog rejected the multi-table commit, changing no table: {message}"
                    );
                    let mut conflicts = Vec::new();
                    for (index, (change, (base, new))) in
                        publication.changes.iter().zip(&versions).enumerate()
                    {
                        let now = remote.current(&change.table).await?;
                        if moved_since(now.as_ref().map(|c| &c.metadata), base, new)? {
                            conflicts.push(index);
                        }
                    }
                    if !conflicts.is_empty() {
                        return Ok(PublishOutcome::Conflicts(conflicts));
                    }
                    // Only the control table moved (another pipeline's record): again.
                    tracing::debug!(attempt, "control table moved during commit; retrying");
                }
            }
        }
        Err(Error::Conflict {
            table: control.to_string(),
            message: "the control table kept changing while this run tried to publish".into(),
        })
    }
}

/// The control table now, and its next version with `record` appended (committed together
/// with the run's tables).
async fn control_with_record(
    remote: &RemoteCatalog,
    record: &RunRecord,
) -> Result<(Current, TableMetadata)> {
    let mut control = control_table(remote).await?;
    // A publish left pending by a table-by-table publisher (e.g. another machine with
    // `transactions = false`) is resolved first, never silently dropped.
    if let Some(pending) = intent_of(&control.metadata)? {
        resolve(remote, &pending).await?;
        control = control_table(remote).await?;
    }
    refuse_a_served_tick(remote, &control, record).await?;
    let new = stage_control(remote, &control, None, Some(record)).await?;
    Ok((control, new))
}
