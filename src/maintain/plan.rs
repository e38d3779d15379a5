//! What a maintenance will do, per table, before anything is written: the files to compact,
//! whether its manifests are rewritten, and which snapshots expire (never the newest
//! `keep_last`, a branch or tag head, a snapshot a recent run record can roll back to, or one
//! a transform's next incremental run reads from, unless `expire_protected`).

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use futures::stream::{self, StreamExt, TryStreamExt};

use super::options::MaintainOptions;
use super::report::{Planned, TableMaintenance};
use crate::catalog::{PipelineCatalog, TABLES_AT_ONCE};
use crate::commit::summary::INPUTS;
use crate::commit::{expirable, window_backlog, Expiry};
use crate::error::{Error, Result};
use crate::maintain::compact::{select, Sizes};
use crate::spec::{Maintenance, Pipeline, TableName};

/// The tables `pipeline` writes (with their jobs' target file sizes), quarantine tables
/// included, in spec order.
fn written_tables(pipeline: &Pipeline) -> Vec<(TableName, usize)> {
    let mut out: Vec<(TableName, usize)> = Vec::new();
    let mut push = |t: &TableName, size: usize| {
        if !out.iter().any(|(o, _)| o == t) {
            out.push((t.clone(), size));
        }
    };
    for job in &pipeline.ingests {
        push(&job.table, job.target_file_size);
        push(&job.table.quarantine(), job.target_file_size);
    }
    for job in &pipeline.transforms {
        push(&job.table, job.target_file_size);
        push(&job.table.quarantine(), job.target_file_size);
    }
    out
}

/// Plans every table: what to compact, whether to rewrite manifests, what may expire.
pub(super) async fn plan(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    options: &MaintainOptions,
    now: DateTime<Utc>,
) -> Result<Vec<Planned>> {
    let settings = &pipeline.maintenance;
    let written = written_tables(pipeline);
    refuse_unwritten(pipeline, options, &written)?;
    let window_start = now
        - chrono::Duration::from_std(settings.expire_older_than)
            .unwrap_or_else(|_| chrono::Duration::days(36_500));
    let mut protect = if options.expire_protected {
        HashSet::new()
    } else {
        rollback_points(catalog, &pipeline.name, window_start, settings.keep_runs).await?
    };
    // Loaded and below planned several tables at a time (each costs round trips on a remote
    // catalog: the table, its metadata file, its manifests).
    let names: Vec<&TableName> = written.iter().map(|(name, _)| name).collect();
    let loaded = catalog.load_many(&names).await?;
    let tables: Vec<(TableName, usize, iceberg::table::Table)> = written
        .iter()
        .zip(loaded)
        .filter_map(|((name, size), table)| Some((name.clone(), *size, table?)))
        .collect();
    if !options.expire_protected {
        protect.extend(read_from(&tables));
    }
    let only: Option<BTreeSet<String>> = options
        .tables
        .as_ref()
        .map(|t| t.iter().map(|n| n.to_string()).collect());
    let mut due = Vec::new();
    for (name, job_target, table) in tables {
        if only
            .as_ref()
            .is_some_and(|o| !o.contains(&name.to_string()))
        {
            continue;
        }
        let expiry = Expiry {
            keep_last: settings.keep_last,
            before_ms: Some(window_start.timestamp_millis()),
            protect: protect.clone(),
            batch: false,
            hold_window: false,
            retain_at_most: pipeline.max_snapshots,
        };
        due.push((name, job_target, table, expiry));
    }
    let mut planned: Vec<Planned> = stream::iter(due)
        .map(|(name, job_target, table, expiry)| {
            plan_table(settings, name, job_target, table, expiry)
        })
        .buffered(TABLES_AT_ONCE)
        .try_collect()
        .await?;
    if options.batch_expiry {
        hold_unless_a_batch_is_due(&mut planned);
    }
    Ok(planned)
}

/// Maintenance after a run expires in batches, all tables together: nothing expires until
/// the snapshots past the window, over all the tables maintained, are as many as those they
/// keep (and at least 2; see [`window_backlog`]); then every table expires all it may. One
/// survey of the catalog deletes what the batch frees, every few runs.
fn hold_unless_a_batch_is_due(planned: &mut [Planned]) {
    let (due, kept) = planned.iter().fold((0, 0), |(due, kept), p| {
        let metadata = p.table.metadata();
        let (d, k) = metadata
            .current_snapshot_id()
            .map_or((0, 0), |head| window_backlog(metadata, head, &p.expiry));
        (due + d, kept + k)
    });
    if due >= kept.max(2) {
        return;
    }
    for p in planned.iter_mut() {
        p.expiry.hold_window = true;
        let metadata = p.table.metadata();
        p.report.expired_snapshots = metadata
            .current_snapshot_id()
            .map_or(0, |head| expirable(metadata, head, &p.expiry).len() as u64);
    }
}

/// Refuses `options.tables` naming a table `pipeline` does not write.
fn refuse_unwritten(
    pipeline: &Pipeline,
    options: &MaintainOptions,
    written: &[(TableName, usize)],
) -> Result<()> {
    let Some(asked) = &options.tables else {
        return Ok(());
    };
    for t in asked {
        if !written.iter().any(|(w, _)| w == t) {
            return Err(Error::Usage(format!(
                "pipeline {} does not write {t}; it writes {}",
                pipeline.name,
                written
                    .iter()
                    .filter(|(w, _)| !w.name.ends_with("__quarantine"))
                    .map(|(w, _)| w.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    Ok(())
}

/// Snapshots the transforms' next incremental runs read from (the inputs each table's current
/// snapshot recorded): expiring one would make that run recompute its whole table.
fn read_from(tables: &[(TableName, usize, iceberg::table::Table)]) -> HashSet<i64> {
    let mut read_from: HashSet<i64> = HashSet::new();
    for (_, _, table) in tables {
        if let Some(text) = table
            .metadata()
            .current_snapshot()
            .and_then(|s| s.summary().additional_properties.get(INPUTS).cloned())
        {
            if let Ok(inputs) =
                serde_json::from_str::<std::collections::BTreeMap<String, Option<i64>>>(&text)
            {
                read_from.extend(inputs.into_values().flatten());
            }
        }
    }
    read_from
}

/// One table's plan: the files to compact, whether its manifests are rewritten, and what of
/// `expiry` (the snapshot it starts from protected too: its undo goes back to it) expires.
async fn plan_table(
    settings: &Maintenance,
    name: TableName,
    job_target: usize,
    table: iceberg::table::Table,
    mut expiry: Expiry,
) -> Result<Planned> {
    let target = settings.target_for(job_target);
    let sizes = Sizes {
        target,
        small_below: settings.small_below(target),
        min_input_files: settings.min_input_files,
    };
    let metadata = table.metadata();
    let compaction = select(table.file_io(), metadata, sizes).await?;
    let current = metadata.current_snapshot_id();
    // The snapshot this maintenance starts from: its undo goes back to it.
    expiry.protect.extend(current);
    let expired_snapshots = current.map_or(0, |head| expirable(metadata, head, &expiry).len());
    let rewrite_manifests = compaction.data_manifests > settings.max_manifests as u64;
    let note = compaction.skipped.clone().or_else(|| {
        current
            .is_none()
            .then(|| "the table has no snapshot yet".to_string())
    });
    Ok(Planned {
        report: TableMaintenance {
            table: name.to_string(),
            manifests: compaction.data_manifests,
            rewrite_manifests,
            expired_snapshots: expired_snapshots as u64,
            snapshot_before: current,
            snapshot_after: current,
            note,
            compaction,
            ..TableMaintenance::default()
        },
        name,
        table,
        target,
        expiry,
    })
}

/// The snapshots run records of `pipeline` finished since `since`, and its `newest` records
/// whatever their age, can roll back to (or undo): each table's `main` before and after such
/// a run.
async fn rollback_points(
    catalog: &PipelineCatalog,
    pipeline: &str,
    since: DateTime<Utc>,
    newest: usize,
) -> Result<HashSet<i64>> {
    let mut out = HashSet::new();
    let mut records = catalog.runs_since(pipeline, since).await?;
    if newest > 0 {
        // The newest `newest` runs that published, not records: each run may be followed by
        // its own maintenance record (and failed runs change nothing), so three times as many
        // records are read.
        let newest_runs: Vec<_> = catalog
            .newest_runs(pipeline, 0, newest * 3)
            .await?
            .into_iter()
            .filter(|r| r.kind != crate::records::RunKind::Maintain && !r.is_failure())
            .take(newest)
            .collect();
        records.extend(newest_runs);
    }
    for record in records {
        for t in &record.tables {
            out.extend(t.snapshot_before);
            out.extend(t.snapshot_after);
        }
    }
    Ok(out)
}
