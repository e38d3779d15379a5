//! One printer per command: the same data as a table or text for a person, or as JSON with
//! `--json`. Printers only format; what they print comes from the library.

use std::io::Write;

use arrow::datatypes::Schema;
use arrow::record_batch::RecordBatch;
use serde::Serialize;

use crate::error::Result;
use crate::inspect::{FileInfo, SnapshotInfo, TableInfo, TableSummary};
use crate::lineage::{render, LineageFormat, PipelineLineage};
use crate::maintain::{Due, TableCheck};
use crate::output::{batches_to_json, batches_to_rows, render_table};
use crate::plan::{JobId, PlannedTable, Validated};
use crate::run::RunReport;
use crate::spec::{ColumnRef, Pipeline};

/// `value` as pretty JSON on stdout (a closed stdout is not an error: nobody reads it).
pub(super) fn json(value: &impl Serialize) {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    let _ = writeln!(crate::secrets::stdout(), "{text}");
}

pub(super) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// `pipeline run` and `pipeline backfill`: the run and a line per job.
pub fn run(report: &RunReport, as_json: bool) {
    if as_json {
        return json(report);
    }
    let rows: Vec<Vec<String>> = report
        .jobs
        .iter()
        .map(|j| {
            vec![
                j.job.to_string(),
                j.table.clone(),
                j.rows_in.to_string(),
                j.rows_out.to_string(),
                j.quarantined.to_string(),
                j.files.to_string(),
                j.snapshot_id.to_string(),
                format!("{:.2}s", j.seconds),
                j.action.to_string(),
            ]
        })
        .collect();
    let mut out = crate::secrets::stdout();
    let on_cluster: Vec<&str> = report
        .jobs
        .iter()
        .filter(|j| j.engine.as_deref().is_some_and(|e| e != "local"))
        .map(|j| j.table.as_str())
        .collect();
    if let Some(engine) = report
        .jobs
        .iter()
        .find_map(|j| j.engine.as_deref().filter(|e| *e != "local"))
    {
        let _ = writeln!(
            out,
            "\ntransforms run on {engine}: {}",
            on_cluster.join(", ")
        );
    }
    let _ = writeln!(out, "{}", headline(report));
    let _ = write!(
        out,
        "{}",
        render_table(
            &strings(&[
                "job",
                "table",
                "rows in",
                "rows out",
                "quarantined",
                "files",
                "snapshot",
                "time",
                "action"
            ]),
            &rows
        )
    );
    if let Some(m) = &report.maintenance {
        super::maintain::print_maintenance(m, false);
    }
    if let Some(e) = &report.maintenance_error {
        let _ = writeln!(
            crate::secrets::stdout(),
            "\nmaintenance after the run failed (the run is published): {e}"
        );
    }
}

/// The line that says what a run published, naming the tables that are no job's
/// (quarantine tables): the jobs' are in the table below it.
fn headline(report: &RunReport) -> String {
    let jobs: std::collections::HashSet<&str> =
        report.jobs.iter().map(|j| j.table.as_str()).collect();
    let others: Vec<&str> = report
        .tables
        .iter()
        .map(String::as_str)
        .filter(|t| !jobs.contains(t))
        .collect();
    format!(
        "\nrun {} of pipeline {}: published {} tables in {:.2}s{}\n",
        report.run_id,
        report.pipeline,
        report.tables.len(),
        report.seconds,
        match others.is_empty() {
            true => String::new(),
            false => format!(" (the jobs' tables below, and {})", others.join(", ")),
        }
    )
}

/// `pipeline backfill --plan`.
pub fn backfill_plan(planned: &[PlannedTable], as_json: bool) {
    if as_json {
        return json(&planned);
    }
    let mut out = crate::secrets::stdout();
    let _ = writeln!(out, "backfill plan (nothing has been changed):\n");
    for t in planned {
        let _ = writeln!(out, "{}: {}", t.table, t.action);
        for i in &t.inputs {
            let amount = match (i.files, i.bytes) {
                (Some(1), Some(b)) => format!(": 1 file, {b} bytes"),
                (Some(f), Some(b)) => format!(": {f} files, {b} bytes"),
                _ => String::new(),
            };
            let _ = writeln!(out, "    reads {} ({}){amount}", i.table, i.read);
        }
    }
}

/// `pipeline validate`: the jobs in the order they run, each with its inputs.
pub fn validate(spec: &Pipeline, v: &Validated, as_json: bool) {
    let jobs: Vec<(&str, String, Vec<String>)> = v
        .graph
        .order
        .iter()
        .map(|j| match j {
            JobId::Ingest(i) => ("ingest", spec.ingests[*i].table.to_string(), Vec::new()),
            JobId::Transform(i) => (
                "transform",
                spec.transforms[*i].table.to_string(),
                v.graph.transforms[*i]
                    .inputs
                    .iter()
                    .map(|t| t.to_string())
                    .collect(),
            ),
        })
        .collect();
    if as_json {
        let order: Vec<&String> = jobs.iter().map(|(_, table, _)| table).collect();
        let detail: Vec<serde_json::Value> = jobs
            .iter()
            .map(|(kind, table, inputs)| {
                serde_json::json!({"job": kind, "table": table, "inputs": inputs})
            })
            .collect();
        let (on, why) = after_run(spec);
        say!(
            "{}",
            serde_json::json!({"pipeline": spec.name, "valid": true, "jobs_in_order": order, "jobs": detail,
                "maintenance_after_run": {"on": on, "why": why}})
        );
        return;
    }
    say!(
        "pipeline {} is valid: {} ingest and {} transform jobs",
        spec.name,
        spec.ingests.len(),
        spec.transforms.len()
    );
    for (kind, table, inputs) in &jobs {
        if inputs.is_empty() {
            say!("  {kind:<9} {table}");
        } else {
            say!("  {kind:<9} {table}  <- {}", inputs.join(", "));
        }
    }
    let (on, why) = after_run(spec);
    say!(
        "  maintenance after each run: {} ({why})",
        if on { "on" } else { "off" }
    );
}

/// Whether runs of `spec` maintain their tables, and why.
fn after_run(spec: &Pipeline) -> (bool, String) {
    let on = spec.maintains_after_run();
    let why = match (spec.maintenance.after_run, spec.catalog.maintains_tables()) {
        (Some(_), _) => "`[maintenance] after_run` says so".to_string(),
        (None, false) => "the default: this catalog does not maintain its tables itself; `[maintenance] after_run = false` turns it off".to_string(),
        (None, true) => "the default: this catalog maintains its tables itself; `[maintenance] after_run = true` turns it on".to_string(),
    };
    (on, why)
}

/// `pipeline plan`: the schema changes and what they break.
/// `pipeline lineage`: the trees of `roots` in `format` (JSON with `--json`).
pub fn lineage(
    lineage: &PipelineLineage,
    roots: &[ColumnRef],
    format: &str,
    downstream: bool,
    as_json: bool,
) {
    let format = if as_json { "json" } else { format };
    let format = LineageFormat::parse(format).unwrap_or(LineageFormat::Text);
    match downstream {
        true => say_raw!(
            "{}",
            crate::lineage::render_downstream(lineage, roots, format)
        ),
        false => say_raw!("{}", render(lineage, roots, format)),
    }
    if format == LineageFormat::Json {
        say!();
    }
}

/// `pipeline tables`: each table with its rows, files, snapshot and last run; a damaged one
/// with what is wrong.
pub fn tables(tables: &[TableSummary], due: &[Due], as_json: bool) {
    if as_json {
        let listed: Vec<serde_json::Value> = tables
            .iter()
            .map(|t| {
                let mut value = serde_json::to_value(t).unwrap_or_default();
                if let Some(d) = due.iter().find(|d| d.table == t.table) {
                    value["maintenance_due"] =
                        serde_json::json!({"why": d.why, "command": d.command});
                }
                value
            })
            .collect();
        return json(&listed);
    }
    let rows: Vec<Vec<String>> = tables
        .iter()
        .map(|t| match &t.damaged {
            None => vec![
                t.table.clone(),
                t.rows.to_string(),
                t.files.to_string(),
                t.snapshot.map(|s| s.to_string()).unwrap_or_default(),
                t.last_run.clone().unwrap_or_default(),
            ],
            Some(why) => vec![
                t.table.clone(),
                "DAMAGED".into(),
                String::new(),
                String::new(),
                why.clone(),
            ],
        })
        .collect();
    say_raw!(
        "{}",
        render_table(
            &strings(&["table", "rows", "files", "snapshot", "last run"]),
            &rows
        )
    );
    for d in due {
        say!(
            "maintenance due: {}: {}; run `{}`",
            d.table,
            d.why.join(", "),
            d.command
        );
    }
}

/// `pipeline files`.
pub fn files(files: &[FileInfo], as_json: bool) {
    if as_json {
        return json(&files);
    }
    let rows: Vec<Vec<String>> = files
        .iter()
        .map(|f| {
            vec![
                f.partition.clone(),
                f.records.to_string(),
                f.bytes.to_string(),
                f.added_snapshot_id.map_or(String::new(), |s| s.to_string()),
                f.path.clone(),
            ]
        })
        .collect();
    say_raw!(
        "{}",
        render_table(
            &strings(&["partition", "rows", "bytes", "added by", "path"]),
            &rows
        )
    );
}

/// `pipeline describe`.
pub fn describe(info: &TableInfo, as_json: bool) {
    if as_json {
        return json(info);
    }
    say!("table:            {}", info.table);
    if let Some(description) = &info.description {
        say!("description:      {description}");
    }
    say!("location:         {}", info.location);
    say!("metadata:         {}", info.metadata_location);
    say!("format version:   {}", info.format_version);
    say!(
        "current snapshot: {}",
        info.current_snapshot_id
            .map(|s| s.to_string())
            .unwrap_or("(none)".into())
    );
    say!("rows:             {}", info.rows);
    say!(
        "data files:       {} ({} bytes)",
        info.data_files,
        info.bytes
    );
    say!(
        "metadata:         {} snapshots, {} manifests in the current one",
        info.snapshots,
        info.manifests
    );
    say!(
        "partitioned by:   {}",
        if info.partition_spec.is_empty() {
            "(unpartitioned)".to_string()
        } else {
            info.partition_spec.join(", ")
        }
    );
    say!();
    let rows: Vec<Vec<String>> = info
        .columns
        .iter()
        .map(|c| {
            vec![
                c.id.to_string(),
                c.name.clone(),
                c.ty.clone(),
                if c.required { "required" } else { "optional" }.into(),
                c.doc.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let header = ["id", "column", "type", "nullability", "description"];
    say_raw!("{}", render_table(&strings(&header), &rows));
}

/// `pipeline history`.
pub fn history(snapshots: &[SnapshotInfo], as_json: bool) {
    if as_json {
        return json(&snapshots);
    }
    let rows: Vec<Vec<String>> = snapshots
        .iter()
        .map(|s| {
            vec![
                format!("{}{}", s.snapshot_id, if s.current { " *" } else { "" }),
                s.committed_at.clone(),
                s.operation.clone(),
                format!("+{}", s.added_records),
                format!("-{}", s.deleted_records),
                s.total_records.to_string(),
                s.run_id.clone().unwrap_or_default(),
            ]
        })
        .collect();
    say_raw!(
        "{}",
        render_table(
            &strings(&[
                "snapshot (* = current)",
                "committed at",
                "operation",
                "added",
                "deleted",
                "total rows",
                "run"
            ]),
            &rows
        )
    );
}

/// `pipeline check`: per table intact or damaged, and each bad file with what is wrong.
pub fn check(checked: &[TableCheck], as_json: bool) {
    if as_json {
        return json(&checked);
    }
    let rows: Vec<Vec<String>> = checked
        .iter()
        .map(|t| {
            vec![
                t.table.clone(),
                match (t.intact(), &t.outside_warehouse) {
                    (false, _) => "DAMAGED",
                    (true, Some(_)) => "OUTSIDE WAREHOUSE",
                    (true, None) => "ok",
                }
                .into(),
                t.files_checked.to_string(),
                t.snapshot.map(|s| s.to_string()).unwrap_or_default(),
            ]
        })
        .collect();
    say_raw!(
        "{}",
        render_table(
            &strings(&["table", "status", "files checked", "snapshot"]),
            &rows
        )
    );
    for t in checked.iter() {
        if let Some(root) = &t.outside_warehouse {
            say!(
                "\n{}: its files lie outside this catalog's warehouse {root}; commands that change or delete files refuse it",
                t.table
            );
        }
    }
    for t in checked.iter().filter(|t| !t.intact()) {
        say!("\n{}:", t.table);
        for p in &t.problems {
            say!("  {}: {}", p.file, p.problem);
        }
        if let Some(run) = &t.run {
            say!(
                "  its current snapshot was written by run {run}: `pipeline rollback {run}` returns the table to the snapshot before it"
            );
        }
    }
}

/// `pipeline query`: an aligned table, or JSON whose values keep their types.
pub fn query(schema: &Schema, batches: &[RecordBatch], as_json: bool) -> Result<()> {
    if as_json {
        say!("{}", batches_to_json(schema, batches)?);
    } else {
        let rows = batches_to_rows(schema, batches)?;
        say_raw!("{}", rows.to_table());
        match rows.rows.len() {
            1 => say!("(1 row)"),
            n => say!("({n} rows)"),
        }
    }
    Ok(())
}

/// `pipeline sql`: rows removed, files rewritten, and the run that undoes it.
pub fn row_change(table: &crate::spec::TableName, change: &crate::dml::RowChange, as_json: bool) {
    if as_json {
        return json(change);
    }
    match &change.record {
        None => say!("no row of {table} matches: nothing was changed"),
        Some(record) => {
            say!(
                "run {}: {} {} rows of {table}{}, rewriting {} of its {} data files ({} bytes); {}",
                record.run_id,
                if change.statement == "delete" {
                    "deleted"
                } else {
                    "updated"
                },
                change.rows,
                record
                    .env
                    .as_ref()
                    .map(|e| format!(" in environment {e}"))
                    .unwrap_or_default(),
                change.files_rewritten,
                change.files_in_table,
                change.bytes_rewritten,
                match &record.env {
                    Some(_) => "main did not move".to_string(),
                    None => format!("undo: {}", record.undo),
                }
            )
        }
    }
}

/// `pipeline erase`: per table the rows and files, the landing files, what was recomputed,
/// the run and the purge.
pub fn erase(report: &crate::erase::EraseReport, as_json: bool) {
    if as_json {
        return json(&serde_json::json!({"erase": report, "purge": report.purge}));
    }
    let receipt = &report.receipt;
    let rows: Vec<Vec<String>> = receipt
        .tables
        .iter()
        .map(|t| {
            vec![
                t.table.clone(),
                t.condition.clone(),
                t.rows.to_string(),
                format!("{} of {}", t.files_rewritten, t.files_in_table),
                t.bytes_rewritten.to_string(),
                t.partitions.join(" "),
            ]
        })
        .collect();
    say_raw!(
        "{}",
        crate::output::render_table(
            &strings(&[
                "table",
                "condition",
                "rows",
                "files rewritten",
                "bytes rewritten",
                "partitions",
            ]),
            &rows
        )
    );
    for t in &report.without_subject {
        say!("{t}: does not hold the subject");
    }
    for t in &receipt.recomputed {
        say!("{t}: recomputed from the erased tables in the same publish");
    }
    for s in &receipt.sources {
        let state = if s.rewritten {
            "rewritten without them"
        } else {
            "still holds them (--rewrite-sources rewrites it)"
        };
        say!("landing file {}: {} record(s), {state}", s.path, s.records);
    }
    for t in &receipt.not_searched {
        say!("{t}");
    }
    match (&report.record, report.planned_only) {
        (_, true) => say!("plan only: nothing was changed"),
        (None, false) => say!("no row matches: nothing was changed"),
        (Some(r), false) => say!("run {}: erased; undo: {}", r.run_id, r.undo),
    }
    say!("history: {}", receipt.history);
    if let Some(p) = &report.purge {
        let (snapshots, files, bytes) = p.tables.iter().fold((0, 0, 0), |(s, f, b), t| {
            (
                s + t.expired_snapshots,
                f + t.deleted_files,
                b + t.deleted_bytes,
            )
        });
        say!(
            "purged (run {}): {snapshots} snapshot(s) expired, {files} file(s) deleted ({bytes} bytes)",
            p.run_id.as_deref().unwrap_or("none: nothing to expire")
        );
    }
}
