//! The writing half of `pipeline maintain`: compacted files are written once; then every
//! table's change (compaction, manifest rewrite, expiry, in that order on top of each other)
//! is built on the table as it is now and published with the record in one catalog commit.
//! A table another writer moved meanwhile is rebased and the commit tried again; files only
//! expired snapshots referenced are deleted once the commit is in.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::report::{Planned, TableMaintenance};
use crate::catalog::PipelineCatalog;
use crate::commit::publish::{
    publisher, rebase, Publication, PublishOutcome, TableChange, ATTEMPTS,
};
use crate::commit::summary::{total_records, JOB, PIPELINE, RUN_ID};
use crate::commit::{
    expire_metadata, stage_snapshot, trim_metadata_log, StagedTable, TableTarget, WriteMode,
};
use crate::error::{Error, Result};
use crate::fault::pause_point;
use crate::maintain::compact::compact;
use crate::maintain::{unreferenced_files, Unreferenced};
use crate::operation::Observer;
use crate::records::{new_run_id, ExpiredFiles, Invocation, RunKind, RunRecord, TableRecord};
use crate::spec::Pipeline;

/// What the writing half did: the published record (`None` when no table needed a change
/// after all), every table's report, and per table (by index) the files the published expiry
/// freed, for the deletion step.
pub(super) struct Executed {
    pub record: Option<RunRecord>,
    pub tables: Vec<TableMaintenance>,
    pub freed: Vec<(usize, Vec<String>)>,
}

/// One table's change in one publish attempt.
struct Change {
    change: TableChange,
    /// After the publish: what to report and delete.
    after: After,
}

/// What a published change leaves to do and report.
struct After {
    /// The table's index in the plan.
    index: usize,
    record: TableRecord,
    /// The files only the expired snapshots referenced, found before the publish (the
    /// record counts them) and deleted after it.
    unreferenced: Option<Unreferenced>,
    rewrote_manifests: bool,
    /// Earlier metadata files cut from the metadata log.
    old_metadata: Vec<String>,
}

pub(super) async fn execute(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    mut planned: Vec<Planned>,
    invocation: &Invocation,
    purge_of: Option<&str>,
    observer: Arc<dyn Observer>,
) -> Result<Executed> {
    let started = Utc::now();
    let run_id = new_run_id(started);
    let properties: HashMap<String, String> = [
        (PIPELINE, pipeline.name.as_str()),
        (RUN_ID, run_id.as_str()),
        (JOB, "maintain"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();

    // Compacted files, written once (a rebase reuses them).
    let mut compacted: Vec<Option<StagedTable>> = Vec::with_capacity(planned.len());
    for p in planned.iter_mut() {
        let plan = &p.report.compaction;
        if plan.groups.is_empty() {
            compacted.push(None);
            continue;
        }
        observer.maintaining(
            &p.name,
            &format!(
                "compacting {} files in {} partition(s)",
                plan.input_files(),
                plan.groups.len()
            ),
        );
        let prefix = format!("{run_id}-compact-{}", uuid::Uuid::new_v4().simple());
        let done = compact(
            &p.name,
            &p.table,
            plan,
            p.target,
            &prefix,
            properties.clone(),
        )
        .await?;
        if let Some(c) = &done {
            p.report.files_in = c.files_in;
            p.report.files_out = c.files_out;
            p.report.bytes_in = c.bytes_in;
            p.report.bytes_out = c.bytes_out;
        }
        compacted.push(done.map(|c| c.staged));
    }

    pause_point("maintain-written");
    let publisher = publisher(catalog);
    let mut published = None;
    for attempt in 1..=ATTEMPTS {
        let mut changes: Vec<(usize, Change)> = Vec::new();
        for (i, p) in planned.iter().enumerate() {
            if let Some(change) = build(catalog, p, compacted[i].as_ref(), &properties).await? {
                changes.push((i, change));
            }
        }
        if changes.is_empty() {
            break;
        }
        let mut record = RunRecord::new(
            &run_id,
            RunKind::Maintain,
            &pipeline.name,
            started,
            invocation,
        );
        record.purge_of = purge_of.map(str::to_string);
        let record = record.finished_now().with_tables(
            changes
                .iter()
                .map(|(_, c)| c.after.record.clone())
                .collect(),
        );
        let mut publication = Publication {
            record: Some(record.clone()),
            ..Publication::default()
        };
        let mut done = Vec::new();
        for (i, mut c) in changes {
            c.after.index = i;
            publication.changes.push(c.change);
            done.push(c.after);
        }
        let conflicts = match publisher.try_publish(&publication).await? {
            PublishOutcome::Published(_) => {
                published = Some((record, done));
                break;
            }
            PublishOutcome::Conflicts(conflicts) => conflicts,
        };
        if attempt == ATTEMPTS {
            return Err(Error::Conflict {
                table: publication.changes[conflicts[0]].table.to_string(),
                message: format!(
                    "other writers kept committing to it; maintenance gave up after {ATTEMPTS} attempts (nothing was changed)"
                ),
            });
        }
        for c in conflicts {
            let i = done[c].index;
            observer.rebasing(&planned[i].name, attempt);
            let Some(staged) = compacted[i].take() else {
                continue; // rebuilt on the table as it is now at the next attempt
            };
            match rebase(catalog, &staged).await {
                Ok(rebased) => {
                    skip_lost_groups(&mut planned[i].report, &rebased);
                    compacted[i] = Some(rebased);
                }
                Err(Error::Conflict { message, .. }) => {
                    let report = &mut planned[i].report;
                    report.skipped_partitions = report
                        .compaction
                        .groups
                        .iter()
                        .map(|g| g.partition.clone())
                        .collect();
                    report.note = Some(format!("compaction skipped: {message}"));
                    report.files_out = 0;
                    report.files_in = 0;
                }
                Err(e) => return Err(e),
            }
        }
        let backoff = 50u64 << attempt;
        let jitter = uuid::Uuid::new_v4().as_u128() as u64 % backoff;
        tokio::time::sleep(Duration::from_millis(backoff + jitter)).await;
    }

    let Some((record, done)) = published else {
        return Ok(Executed {
            record: None,
            tables: planned.into_iter().map(|p| p.report).collect(),
            freed: Vec::new(),
        });
    };
    let mut freed_files = Vec::new();
    let mut reports: Vec<TableMaintenance> = planned.into_iter().map(|p| p.report).collect();
    for after in done {
        let report = &mut reports[after.index];
        report.snapshot_before = after.record.snapshot_before;
        report.snapshot_after = after.record.snapshot_after;
        report.rewrite_manifests = after.rewrote_manifests;
        report.expired_snapshots = after.record.expired.as_ref().map_or(0, |e| e.snapshots);
        if compacted[after.index].is_none() {
            report.compaction.groups.clear();
        }
        let mut freed = after.old_metadata;
        if let Some(unreferenced) = after.unreferenced {
            report.deleted_data_files = unreferenced.data_files;
            report.deleted_bytes = unreferenced.data_bytes;
            if catalog.kind() == "s3tables" {
                report.note =
                    Some("S3 Tables removes the files expired snapshots referenced itself".into());
            } else {
                freed.extend(unreferenced.files);
            }
        }
        freed_files.push((after.index, freed));
    }
    Ok(Executed {
        record: Some(record),
        tables: reports,
        freed: freed_files,
    })
}

/// The change of one table on top of its current state: the compaction (rebased when the
/// table moved), then a manifest rewrite, then expiry. `None` when nothing changes.
async fn build(
    catalog: &PipelineCatalog,
    p: &Planned,
    compacted: Option<&StagedTable>,
    properties: &HashMap<String, String>,
) -> Result<Option<Change>> {
    let file_io = catalog.file_io();
    let (mut metadata, base_location, before, mut operation) = match compacted {
        Some(staged) => (
            staged.published_metadata()?,
            staged.base_location.clone(),
            staged.metadata.current_snapshot_id(),
            Some("compact"),
        ),
        None => {
            let current = catalog.load_existing(&p.name).await?;
            let location = current.metadata_location_result()?;
            (
                TableTarget::unchanged(&p.name, current.metadata(), location)?.metadata,
                Some(location.to_string()),
                current.metadata().current_snapshot_id(),
                None,
            )
        }
    };
    let Some(base_location) = base_location else {
        return Ok(None);
    };
    let mut rewrote_manifests = false;
    if p.report.rewrite_manifests && metadata.current_snapshot_id().is_some() {
        let staged = stage_snapshot(
            TableTarget {
                table: p.name.clone(),
                base_location: Some(base_location.clone()),
                metadata,
                reshaped: false,
            },
            Vec::new(),
            file_io,
            properties.clone(),
            WriteMode::RewriteManifests,
        )
        .await?;
        metadata = staged.published_metadata()?;
        operation = operation.or(Some("rewrite_manifests"));
        rewrote_manifests = true;
    }
    let Some(head) = metadata.current_snapshot_id() else {
        return Ok(None);
    };
    let expired = expire_metadata(&p.name, &metadata, head, &p.expiry, file_io).await?;
    if let Some(e) = &expired {
        metadata = e.metadata.clone();
    }
    let Some(operation) = operation.or(expired.as_ref().map(|_| "expire_snapshots")) else {
        return Ok(None);
    };
    // The embedded catalog's metadata log is ours to keep short (a REST server keeps its own;
    // S3 Tables removes unreferenced files itself).
    let old_metadata = if catalog.local_warehouse().is_some() {
        let (trimmed, dropped) = trim_metadata_log(metadata)?;
        metadata = trimmed;
        dropped
    } else {
        Vec::new()
    };
    let rows = total_records(metadata.current_snapshot());
    // What the expired snapshots free is known now, against the metadata to be published: the
    // record says it, and the same list is deleted once the publish is in.
    let unreferenced = match &expired {
        Some(e) => Some(unreferenced_files(file_io, &metadata, e).await?),
        None => None,
    };
    let expired = expired.map(|e| ExpiredFiles {
        snapshots: e.snapshots.len() as u64,
        data_files: unreferenced.as_ref().map_or(0, |u| u.data_files),
        data_bytes: unreferenced.as_ref().map_or(0, |u| u.data_bytes),
        files: unreferenced.as_ref().map_or(0, |u| u.files.len() as u64)
            + old_metadata.len() as u64,
    });
    Ok(Some(Change {
        after: After {
            index: 0,
            unreferenced,
            rewrote_manifests,
            old_metadata,
            record: TableRecord {
                table: p.name.to_string(),
                operation: operation.into(),
                partitions: None,
                snapshot_before: before,
                snapshot_after: Some(head),
                rows,
                expired,
                dropped_metadata: None,
            },
        },
        change: TableChange {
            table: p.name.clone(),
            expected_location: Some(base_location),
            metadata: Some(metadata),
        },
    }))
}

/// After a rebase, the compaction's groups whose files are no longer replaced (another writer
/// changed them) are reported as skipped.
fn skip_lost_groups(report: &mut TableMaintenance, rebased: &StagedTable) {
    let WriteMode::Compact(kept) = &rebased.mode else {
        return;
    };
    for group in &report.compaction.groups {
        if !group.files.iter().any(|f| kept.contains(f))
            && !report.skipped_partitions.contains(&group.partition)
        {
            report.skipped_partitions.push(group.partition.clone());
        }
    }
}
