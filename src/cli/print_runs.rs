//! The printers of run records: `pipeline runs`, `pipeline run-info` (an erase's with the
//! purges that followed it) and the record of a rollback.

use super::print::{json, strings};
use crate::output::render_table;
use crate::quality::summary;
use crate::records::RunRecord;
use crate::rollback::RollbackReport;
use crate::spec::ExpectAction;

/// `pipeline run-info` and `pipeline rollback`: one run record.
/// `pipeline rollback RUN --plan`: what each table would do.
pub fn rollback_plan(report: &RollbackReport, as_json: bool) {
    if as_json {
        return json(report);
    }
    let show = |s: Option<i64>| s.map_or_else(|| "-".to_string(), |s| s.to_string());
    let rows: Vec<Vec<String>> = report
        .tables
        .iter()
        .map(|t| {
            let what = match t.action.as_str() {
                "drop" => "DROP (the run created it; its files stay, the undo registers it back)",
                "empty" => "EMPTY (the run created it; main is removed)",
                "restore" => "register back from its last metadata",
                "refill" => "main back to its snapshot",
                _ => "main back to the snapshot before the run",
            };
            vec![
                t.table.clone(),
                what.to_string(),
                show(t.from),
                show(t.to),
                t.rows.to_string(),
            ]
        })
        .collect();
    say!(
        "rolling back run {} would (nothing was changed):",
        report.rolls_back
    );
    say_raw!(
        "{}",
        render_table(
            &[
                "table",
                "action",
                "snapshot now",
                "snapshot after",
                "rows after"
            ]
            .map(String::from),
            &rows
        )
    );
    let dropped = report.dropped();
    if !dropped.is_empty() {
        say!("drops {}: {}", dropped.len(), dropped.join(", "));
    }
}

pub fn record(run: &RunRecord, as_json: bool) {
    if as_json {
        return json(run);
    }
    say!("run:          {}", run.run_id);
    say!("pipeline:     {}", run.pipeline);
    say!("kind:         {}", run.kind);
    if let Some(id) = &run.rolls_back {
        say!("rolls back:   {id}");
    }
    if let Some(env) = &run.env {
        say!("environment:  {env} (each table's branch {env}; main did not move)");
    }
    if let Some(tick) = &run.tick {
        say!("tick:         {tick} (scheduled)");
    }
    if let Some(error) = &run.error {
        say!("FAILED:       {error}");
    }
    say!("started at:   {}", run.started_at);
    if run.is_failure() {
        say!("failed at:    {}", run.finished_at);
    } else {
        say!("published at: {}", run.finished_at);
    }
    if !run.invocation.user.is_empty() {
        say!(
            "by:           {} on {}",
            run.invocation.user,
            run.invocation.host
        );
    }
    if let Some(client) = &run.invocation.client {
        say!("via:          MCP client {client}");
    }
    if let Some(reason) = &run.invocation.reason {
        say!("reason:       {reason}");
    }
    if !run.invocation.command.is_empty() {
        say!("command:      {}", run.invocation.command.join(" "));
    }
    say!(
        "undo with:    {}",
        run.undo_command()
            .unwrap_or_else(|| "(nothing to undo: the run changed no table)".into())
    );
    say!();
    if run.is_failure() {
        return failure_trail(run);
    }
    let show = |s: Option<i64>| s.map_or_else(|| "(none)".to_string(), |s| s.to_string());
    let rows: Vec<Vec<String>> = run
        .tables
        .iter()
        .map(|t| {
            vec![
                t.table.clone(),
                t.operation.clone(),
                show(t.snapshot_before),
                show(t.snapshot_after),
                t.rows.to_string(),
            ]
        })
        .collect();
    say_raw!(
        "{}",
        render_table(
            &strings(&[
                "table",
                "operation",
                "snapshot before",
                "snapshot after",
                "rows"
            ]),
            &rows
        )
    );
    checks(run);
}

/// The checks a run evaluated, each with its verdict, what was found and the violating rows
/// sampled.
fn checks(run: &RunRecord) {
    if run.quality.is_empty() {
        return;
    }
    say!();
    say!("checks:");
    for q in &run.quality {
        let verdict = match (q.passed, q.action) {
            (true, _) => "passed",
            (false, ExpectAction::Warn) => "WARNING",
            (false, ExpectAction::Drop) => "rows quarantined",
            (false, ExpectAction::Fail) => "FAILED",
        };
        say!("  {} {}: {verdict} ({})", q.table, q.name, q.detail);
        for row in &q.sample {
            say!("      {row}");
        }
    }
}

/// What a failed run got done before it failed: the jobs that finished staging (nothing of
/// theirs was published) and the checks evaluated.
fn failure_trail(run: &RunRecord) {
    if run.finished_jobs.is_empty() {
        say!("no job finished before the run failed; no table changed");
    } else {
        say!("jobs that finished before the run failed (nothing of theirs was published):");
        let rows: Vec<Vec<String>> = run
            .finished_jobs
            .iter()
            .map(|j| vec![j.table.clone(), j.action.clone(), j.rows.to_string()])
            .collect();
        say_raw!(
            "{}",
            render_table(&strings(&["table", "action", "rows staged"]), &rows)
        );
    }
    checks(run);
}

/// `pipeline run-info` of an erase: the record, then what the maintain runs that purged it
/// expired and freed (`purged_by` in JSON).
pub fn record_with_purges(run: &RunRecord, purges: &[RunRecord], as_json: bool) {
    if as_json {
        let mut value = serde_json::to_value(run).unwrap_or_default();
        if !purges.is_empty() {
            value["purged_by"] = serde_json::to_value(purges).unwrap_or_default();
        }
        return json(&value);
    }
    record(run, false);
    for purge in purges {
        say!();
        say!("purged by run {}:", purge.run_id);
        for t in &purge.tables {
            if let Some(e) = &t.expired {
                say!(
                    "  {}: {} snapshot(s) expired; {} data file(s) ({} bytes), {} file(s) in all, freed",
                    t.table, e.snapshots, e.data_files, e.data_bytes, e.files
                );
            }
        }
    }
}

/// `pipeline runs`: every published run, oldest first.
pub fn runs(runs: &[RunRecord], as_json: bool) {
    if as_json {
        return json(&runs);
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.run_id.clone(),
                r.pipeline.clone(),
                match (&r.rolls_back, &r.error, &r.tick) {
                    (Some(id), _, _) => format!("rollback of {id}"),
                    (None, Some(_), Some(_)) => format!("{} FAILED (scheduled)", r.kind),
                    (None, Some(_), None) => format!("{} FAILED", r.kind),
                    (None, None, Some(_)) => format!("{} (scheduled)", r.kind),
                    (None, None, None) => r.kind.to_string(),
                } + &r
                    .env
                    .as_ref()
                    .map(|e| format!(" (env {e})"))
                    .unwrap_or_default(),
                r.finished_at.clone(),
                r.invocation.user.clone(),
                r.invocation.reason.clone().unwrap_or_default(),
                r.tables.len().to_string(),
                summary(&r.quality),
                r.undo_command()
                    .unwrap_or_else(|| "(nothing to undo)".into()),
            ]
        })
        .collect();
    say_raw!(
        "{}",
        render_table(
            &strings(&[
                "run",
                "pipeline",
                "kind",
                "published at",
                "by",
                "reason",
                "tables",
                "checks",
                "undo",
            ]),
            &rows
        )
    );
}
