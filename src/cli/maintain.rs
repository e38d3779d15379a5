//! `pipeline maintain` and `pipeline orphans`: table upkeep, and what each printed.

use std::sync::Arc;
use std::time::Duration;

use super::args::{MaintainArgs, OrphansArgs};
use super::progress::Progress;
use crate::catalog::open_project_catalog;
use crate::commit::deletion::UNREFERENCED_MIN_AGE;
use crate::error::{Error, Result};
use crate::maintain::TableMaintenance;
use crate::maintain::{delete_orphans_safely, find_orphans, Orphans, OutsideTable};
use crate::maintain::{maintain_pipeline, MaintainOptions, MaintainReport};
use crate::output::render_table;
use crate::records::Invocation;
use crate::spec::{load_with_catalog, pipeline_names, TableName};

/// Orphans younger than this are deleted only with `--force`.
const SAFE_ORPHAN_MINUTES: u64 = UNREFERENCED_MIN_AGE.as_secs() / 60;

/// `pipeline maintain PIPELINE`.
pub async fn maintain(
    project: &std::path::Path,
    catalog: Option<&str>,
    args: &MaintainArgs,
    invocation: Invocation,
    as_json: bool,
) -> Result<()> {
    let MaintainArgs {
        pipeline,
        tables,
        plan,
        expire_protected,
        wait,
        ..
    } = args;
    let spec = load_with_catalog(project, pipeline, catalog)?;
    let mut options = MaintainOptions::new(wait.lock_wait());
    if !tables.is_empty() {
        options.tables = Some(
            tables
                .iter()
                .map(|t| {
                    TableName::parse(t).ok_or_else(|| {
                        Error::Usage(format!(
                            "`{t}` is not a table name; write namespace.table, e.g. silver.orders"
                        ))
                    })
                })
                .collect::<Result<_>>()?,
        );
    }
    options.plan_only = *plan;
    options.expire_protected = *expire_protected;
    options.invocation = invocation;
    let report = maintain_pipeline(&spec, &options, Arc::new(Progress::stderr())).await?;
    print_maintenance(&report, as_json);
    Ok(())
}

/// `pipeline orphans [--delete]`.
pub async fn orphans(
    project: &std::path::Path,
    catalog_name: Option<&str>,
    args: &OrphansArgs,
    as_json: bool,
) -> Result<()> {
    let OrphansArgs {
        older_than,
        delete,
        force,
        pipeline,
        wait,
    } = args;
    let (older_than, delete) = (*older_than, *delete);
    if delete && older_than < SAFE_ORPHAN_MINUTES && !*force {
        return Err(Error::Usage(format!(
            "--delete with --older-than {older_than} could delete files a run outside this project (or on another machine) is writing into the same warehouse right now; runs of this project's pipelines are waited for, others cannot be: use at least {SAFE_ORPHAN_MINUTES} minutes, or add --force if no such writer exists"
        )));
    }
    let catalog = open_project_catalog(project, pipeline.as_deref(), catalog_name).await?;
    let age = Duration::from_secs(older_than * 60);
    let found = if delete {
        let pipelines = pipeline_names(project)?;
        delete_orphans_safely(
            &catalog,
            &pipelines,
            age,
            wait.lock_wait(),
            &|pipeline, holder| {
                tell!("  waiting   for the run of {pipeline} in progress to finish ({holder})")
            },
        )
        .await?
    } else {
        find_orphans(&catalog, age).await?
    };
    print_orphans(&found, delete, as_json);
    if !found.outside.is_empty() {
        return Err(Error::Damaged(outside_message(&found.outside)));
    }
    if !found.damaged.is_empty() {
        return Err(Error::Damaged(format!(
            "{} table(s) could not be read, and nothing under them was listed{}: {}; `pipeline check` says what is wrong",
            found.damaged.len(),
            if delete { " or deleted" } else { "" },
            found
                .damaged
                .iter()
                .map(|d| d.table.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

/// What `pipeline maintain` did (or would do), per table; also printed after a run with
/// `[maintenance] after_run`.
pub fn print_maintenance(report: &MaintainReport, as_json: bool) {
    if as_json {
        say!(
            "{}",
            serde_json::to_string_pretty(report).unwrap_or_default()
        );
        return;
    }
    let rows: Vec<Vec<String>> = report
        .tables
        .iter()
        .map(|t| maintenance_row(report, t))
        .collect();
    say!("\n{}\n", maintenance_title(report));
    let head: Vec<String> = [
        "table",
        "data files",
        "most in a partition",
        "compaction",
        "manifests",
        "expired snapshots",
        "deleted files",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    say_raw!("{}", render_table(&head, &rows));
    for t in &report.tables {
        print_table_notes(t);
    }
    if let Some(undo) = &report.undo {
        say!("undo the compactions: {undo}");
    }
}

/// One table's row of the maintenance table, in the order of its header.
fn maintenance_row(report: &MaintainReport, t: &TableMaintenance) -> Vec<String> {
    let compaction = if report.planned_only {
        match t.compaction.groups.len() {
            0 => "-".to_string(),
            n => format!("{} files in {n} partition(s)", t.compaction.input_files()),
        }
    } else if t.files_in > 0 {
        format!("{} -> {} files", t.files_in, t.files_out)
    } else {
        "-".to_string()
    };
    let manifests = if t.rewrite_manifests {
        format!("{} -> 1", t.manifests)
    } else {
        t.manifests.to_string()
    };
    vec![
        t.table.clone(),
        t.compaction.data_files.to_string(),
        t.compaction.max_files_per_partition.to_string(),
        compaction,
        manifests,
        t.expired_snapshots.to_string(),
        if report.planned_only || t.expired_snapshots == 0 {
            "-".into()
        } else {
            format!("{} ({} bytes of data)", t.deleted_files, t.deleted_bytes)
        },
    ]
}

/// The line above the maintenance table: a plan, the maintenance run, or nothing to do.
fn maintenance_title(report: &MaintainReport) -> String {
    if report.planned_only {
        format!(
            "maintenance plan for pipeline {} (nothing has been changed):",
            report.pipeline
        )
    } else {
        match &report.run_id {
            Some(id) => format!(
                "maintenance {id} of pipeline {} in {:.2}s:",
                report.pipeline, report.seconds
            ),
            None => format!(
                "pipeline {}: every table is healthy, nothing to do",
                report.pipeline
            ),
        }
    }
}

/// What else happened to one table: partitions skipped, a note, files left undeleted.
fn print_table_notes(t: &TableMaintenance) {
    if !t.skipped_partitions.is_empty() {
        say!(
            "{}: partitions left as they were (another writer changed their files meanwhile): {}",
            t.table,
            t.skipped_partitions.join(", ")
        );
    }
    if let Some(note) = &t.note {
        say!("{}: {note}", t.table);
    }
    if t.undeleted_files > 0 {
        say!(
            "{}: {} files could not be deleted; `pipeline orphans` lists them",
            t.table,
            t.undeleted_files
        );
    }
}

/// Tables whose location lies outside the warehouse root, and what to do about it.
pub fn outside_message(outside: &[OutsideTable]) -> String {
    format!(
        "{} table(s) of this catalog keep their files outside its warehouse, and nothing under them was searched or deleted: {}; the project was probably copied or its warehouse moved (Iceberg locations are absolute, so the copy's catalog points at the original's files): point [catalog] warehouse at that folder to work on those tables, or remove this project's warehouse/ to start afresh",
        outside.len(),
        outside
            .iter()
            .map(|t| format!("{} at {}", t.table, t.location))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `pipeline orphans`: the unreferenced files, and the tables that could not be read.
fn print_orphans(found: &Orphans, deleted: bool, as_json: bool) {
    if as_json {
        say!(
            "{}",
            serde_json::json!({
                "orphans": found.orphans,
                "deleted": deleted,
                "damaged": found.damaged,
                "outside_warehouse": found.outside,
                "kept": found.kept,
            })
        );
        return;
    }
    let rows: Vec<Vec<String>> = found
        .orphans
        .iter()
        .map(|o| vec![o.table.clone(), o.bytes.to_string(), o.path.clone()])
        .collect();
    let head: Vec<String> = ["table", "bytes", "file"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    say_raw!("{}", render_table(&head, &rows));
    let total: u64 = found.orphans.iter().map(|o| o.bytes).sum();
    let verb = if deleted {
        "deleted"
    } else {
        "unreferenced (run with --delete to remove)"
    };
    say!(
        "{} files, {total} bytes {verb}",
        found.orphans.len() - found.kept.len()
    );
    for k in &found.kept {
        say!("kept {}: {}", k.path, k.why);
    }
    for d in &found.damaged {
        say!("skipped {} (cannot be read): {}", d.table, d.problem);
    }
    for t in &found.outside {
        say!(
            "skipped {} (its location {} lies outside the warehouse)",
            t.table,
            t.location
        );
    }
}
