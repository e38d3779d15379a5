//! Publishing on catalogs that move one table at a time (S3 Tables; REST servers without
//! multi-table commits), through a durable publish record.
//!
//! The record lives in the catalog itself, in the control table `pipeline_meta.runs`: its
//! table property `pipeline.publishing` holds the run's intent (which snapshot each table moves
//! to, from which metadata version), and each published run appends one row holding its run
//! record. Every change of the control table is a new snapshot moved by compare-and-set, so
//! only one intent can be pending at a time.
//!
//! ```text
//!  write new metadata files ─▶ check every table is still at its base ─▶ (conflict: nothing done)
//!      ─▶ control table: set intent ─▶ move table 1, then tables 2 … N (compare-and-set each;
//!         on S3 Tables up to eight at once)
//!      ─▶ control table: clear intent + append run record
//! ```
//!
//! A command killed after the intent is set leaves it pending; the next command that changes
//! tables completes or undoes it (see `recover.rs`).
//!
//! What a reader can observe: between the first and the last table move, some of the run's
//! tables are at the new version and others at the old one (never a mix within one table).

use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::{self, StreamExt, TryStreamExt};
use iceberg::spec::{TableMetadata, MAIN_BRANCH};

use super::intent::{
    commit_control, finish, intent_of, is_pending, refuse_a_served_tick, written_if_taken, Intent,
    IntentEntry,
};
use super::publication::{
    locations, versions_of, Publication, PublishOutcome, Publisher, TableChange,
};
use super::recover::resolve;
use crate::catalog::{pinned, table_updates, RemoteCatalog, Swap, TABLES_AT_ONCE};
use crate::error::{Error, Result};
use crate::fault::pause_point;
use crate::records::{control_name, control_table, run_records, RunRecord};
use crate::spec::TableName;

/// The publisher of remote catalogs without multi-table commits.
pub struct JournaledPublisher {
    pub remote: Arc<RemoteCatalog>,
}

#[async_trait]
impl Publisher for JournaledPublisher {
    async fn try_publish(&self, publication: &Publication) -> Result<PublishOutcome> {
        let remote = &self.remote;
        if publication.changes.is_empty() {
            // Nothing moves: only the record is written (one control-table commit).
            if let Some(record) = &publication.record {
                append_record(remote, record).await?;
            }
            return Ok(PublishOutcome::Published(Vec::new()));
        }
        // 0. A scheduled tick another scheduler published meanwhile ends the publish before
        //    any table is looked at (the intent's compare-and-set checks it again, atomically).
        if let Some(record) = publication.record.as_ref().filter(|r| r.tick.is_some()) {
            refuse_a_served_tick(remote, &control_table(remote).await?, record).await?;
        }
        // 1. New metadata files (invisible until a pointer moves to them).
        let (entries, news) = write_metadata_files(remote, publication).await?;
        // 2. Every table must still be where the run found it.
        let conflicts = moved_since_staged(remote, publication).await?;
        if !conflicts.is_empty() {
            return Ok(PublishOutcome::Conflicts(conflicts));
        }
        // 3. The intent, durably.
        let intent = Intent {
            // Fresh for every attempt: a resolver of an earlier attempt never matches it.
            id: uuid::Uuid::new_v4().to_string(),
            started_at: crate::fault::wall_now().to_rfc3339(),
            entries,
            record: publication.record.clone(),
        };
        set_intent(remote, &intent).await?;
        pause_point("intent-set");
        // 4. Each table, by compare-and-set.
        let moved = match move_tables(remote, &intent, &news, publication).await? {
            ControlFlow::Continue(moved) => moved,
            ControlFlow::Break(outcome) => return Ok(outcome),
        };
        // 5. Done: clear the intent and append the record.
        if !finish(remote, &intent, true).await? {
            return outcome_of(remote, &intent, publication, 0).await;
        }
        Ok(PublishOutcome::Published(moved))
    }
}

/// Step 4 of the publish of `intent`: moves each table (`news`: its base and new metadata)
/// by compare-and-set; the new locations in order, or the outcome when the publish ended
/// otherwise (a conflict, or another command resolved the intent).
///
/// The first table moves alone (a command killed right after it leaves one table moved,
/// which recovery completes); then, on catalogs whose compare-and-set pins the metadata file
/// (S3 Tables), every other table up to [`TABLES_AT_ONCE`] at a time. A command that found
/// the intent pending may have resolved it meanwhile (this publisher was slow): on S3 Tables
/// its rollback fences the tables still at their base, so the moves fail; a REST server's
/// compare-and-set cannot be fenced so, and there the intent is read again before each
/// table's move, one table at a time.
async fn move_tables(
    remote: &RemoteCatalog,
    intent: &Intent,
    news: &[(TableMetadata, TableMetadata)],
    publication: &Publication,
) -> Result<ControlFlow<PublishOutcome, Vec<String>>> {
    let fenced = remote.kind != "rest";
    let mut moved: Vec<String> = Vec::with_capacity(news.len());
    let mut next = 0;
    while next < news.len() {
        if !fenced && !is_pending(remote, intent).await? {
            return Ok(ControlFlow::Break(
                outcome_of(remote, intent, publication, next).await?,
            ));
        }
        let batch = match fenced && next > 0 {
            true => next..news.len(),
            false => next..next + 1,
        };
        let swaps: Vec<Swap> = stream::iter(batch.clone())
            .map(|i| {
                let (entry, (base, new)) = (&intent.entries[i], &news[i]);
                let table = &publication.changes[i].table;
                remote
                    .pointers
                    .swap(table, &entry.from_location, base, &entry.metadata_file, new)
            })
            .buffered(TABLES_AT_ONCE)
            .try_collect()
            .await?;
        for (index, swap) in batch.clone().zip(swaps) {
            match swap {
                Swap::Moved(location) => moved.push(location),
                Swap::AlreadyThere => {
                    let now = remote.current(&publication.changes[index].table).await?;
                    moved.push(now.map(|c| c.location).unwrap_or_default());
                }
                Swap::Conflict => {
                    return Ok(ControlFlow::Break(
                        resolve_conflict(remote, intent, publication, index).await?,
                    ));
                }
            }
        }
        next = batch.end;
        pause_point("publishing");
    }
    Ok(ControlFlow::Continue(moved))
}

/// Writes the new metadata file of every change (the version after its base) where the
/// catalog takes files, or notes the changes where it takes those (REST); returns the intent's
/// entries and, per change, its base and new metadata, in order. Up to [`TABLES_AT_ONCE`] tables at a
/// time: the files are invisible until a pointer moves to them.
async fn write_metadata_files(
    remote: &RemoteCatalog,
    publication: &Publication,
) -> Result<(Vec<IntentEntry>, Vec<(TableMetadata, TableMetadata)>)> {
    let written: Vec<(IntentEntry, (TableMetadata, TableMetadata))> =
        // By index: a closure over `&TableChange` would not be `Send` for every lifetime.
        stream::iter(0..publication.changes.len())
            .map(|i| entry_of(remote, &publication.changes[i]))
            .buffered(TABLES_AT_ONCE)
            .try_collect()
            .await?;
    Ok(written.into_iter().unzip())
}

/// The intent entry of `change` (its new metadata file written where the catalog takes
/// files), with its base and new metadata.
async fn entry_of(
    remote: &RemoteCatalog,
    change: &TableChange,
) -> Result<(IntentEntry, (TableMetadata, TableMetadata))> {
    let (base_location, base, new) = versions_of(remote, change).await?;
    let file = written_if_taken(remote, &base_location, &new).await?;
    // The branch the publish pins: `main`, or the environment's (the first one moved).
    let branch = pinned(&base, &new)?.remove(0);
    let updates = match remote.takes_metadata_files() {
        true => None,
        false => Some(table_updates(&base, &new)?.1),
    };
    let entry = IntentEntry {
        table: change.table.to_string(),
        from_location: base_location,
        from_snapshot: branch.from,
        to_snapshot: branch.to,
        branch: Some(branch.branch).filter(|b| b != MAIN_BRANCH),
        metadata_file: file,
        updates,
    };
    Ok((entry, (base, new)))
}

/// The indexes of the changes whose table is no longer at the location the run staged it on
/// (up to [`TABLES_AT_ONCE`] tables looked at a time).
async fn moved_since_staged(
    remote: &RemoteCatalog,
    publication: &Publication,
) -> Result<Vec<usize>> {
    let tables: Vec<&TableName> = publication.changes.iter().map(|c| &c.table).collect();
    let now = remote.current_locations(&tables).await?;
    Ok(publication
        .changes
        .iter()
        .zip(now)
        .enumerate()
        .filter(|(_, (change, now))| *now != change.expected_location)
        .map(|(index, _)| index)
        .collect())
}

/// The outcome of the publish of `intent` when the move of change `index` found its table
/// moved: whatever another command resolved it to, or what resolving it here made of it.
async fn resolve_conflict(
    remote: &RemoteCatalog,
    intent: &Intent,
    publication: &Publication,
    index: usize,
) -> Result<PublishOutcome> {
    if !is_pending(remote, intent).await? {
        // Another command resolved this publish meanwhile (a recovery that
        // found it pending): its outcome is ours.
        return outcome_of(remote, intent, publication, index).await;
    }
    // Another writer got in between the check and the move: resolve our
    // publish (forward if the table is at our target after all, else back) and
    // report what it became.
    let table = &publication.changes[index].table;
    tracing::warn!(table = %table, "table moved during publish; resolving");
    let recovery = resolve(remote, intent).await?;
    if recovery.completed {
        return outcome_of(remote, intent, publication, index).await;
    }
    Ok(PublishOutcome::Conflicts(vec![index]))
}

/// Sets `intent` on the control table, first resolving another command's pending one.
async fn set_intent(remote: &RemoteCatalog, intent: &Intent) -> Result<()> {
    for _ in 0..20 {
        let control = control_table(remote).await?;
        if let Some(pending) = intent_of(&control.metadata)? {
            tracing::warn!(run = %pending.id, "another command left a publish pending; resolving it first");
            resolve(remote, &pending).await?;
            continue;
        }
        if let Some(record) = &intent.record {
            refuse_a_served_tick(remote, &control, record).await?;
        }
        if let Swap::Moved(_) | Swap::AlreadyThere =
            commit_control(remote, &control, Some(intent), None).await?
        {
            return Ok(());
        }
    }
    Err(Error::Conflict {
        table: control_name().to_string(),
        message: "the control table kept changing while this command tried to record its publish"
            .into(),
    })
}

/// Appends `record` alone (a run that changed no table), after any pending publish.
async fn append_record(remote: &RemoteCatalog, record: &RunRecord) -> Result<()> {
    for _ in 0..20 {
        let control = control_table(remote).await?;
        if let Some(pending) = intent_of(&control.metadata)? {
            resolve(remote, &pending).await?;
            continue;
        }
        refuse_a_served_tick(remote, &control, record).await?;
        if let Swap::Moved(_) | Swap::AlreadyThere =
            commit_control(remote, &control, None, Some(record)).await?
        {
            return Ok(());
        }
    }
    Err(Error::Conflict {
        table: control_name().to_string(),
        message: "the control table kept changing while this command tried to record its run"
            .into(),
    })
}

/// The outcome of a publish another command resolved: published if its run record exists,
/// otherwise (rolled back) a conflict on change `index`.
async fn outcome_of(
    remote: &RemoteCatalog,
    intent: &Intent,
    publication: &Publication,
    index: usize,
) -> Result<PublishOutcome> {
    let recorded = match &intent.record {
        Some(record) => run_records(remote)
            .await?
            .iter()
            .any(|r| r.run_id == record.run_id),
        None => false,
    };
    if !recorded {
        tracing::warn!(run = %intent.id, "another command rolled this publish back");
        return Ok(PublishOutcome::Conflicts(vec![index]));
    }
    tracing::info!(run = %intent.id, "another command completed this publish");
    Ok(PublishOutcome::Published(
        locations(remote, &publication.changes).await?,
    ))
}
