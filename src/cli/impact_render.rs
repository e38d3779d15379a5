//! `pipeline plan` as text: each changed table, its changes marked BREAKING or ok, and under
//! every breaking change what would break, with SQL file:line and reader owners.

use std::fmt::Write;

use crate::plan::impact::{Break, ChangeKind, Failure, SchemaPlan};

/// The plan as the terminal shows it.
pub fn render_text(plan: &SchemaPlan) -> String {
    let mut out = String::new();
    let breaking = plan.breaking() - plan.failures.len();
    let _ = writeln!(
        out,
        "plan for pipeline {}: {} table(s) change ({} unchanged), {} breaking change(s), {} transform(s) would fail",
        plan.pipeline,
        plan.tables.len(),
        plan.unchanged.len(),
        breaking,
        plan.failures.len()
    );
    for table in &plan.tables {
        let _ = writeln!(out, "\n{}", table.table);
        if table.new {
            let _ = writeln!(out, "  ok        new table (created by the next run)");
        }
        for change in &table.changes {
            let mark = if change.breaking { "BREAKING" } else { "ok" };
            let _ = writeln!(out, "  {mark:<9} {}", describe(&change.kind));
            for b in &change.breaks {
                let _ = writeln!(out, "              breaks {}", describe_break(b));
            }
            if change.breaking && change.breaks.is_empty() {
                let _ = writeln!(
                    out,
                    "              no transform of this pipeline or declared reader uses it"
                );
            }
        }
    }
    failure_list(
        &mut out,
        "transforms that would fail against the new schemas:",
        "BREAKING  ",
        &plan.failures,
    );
    failure_list(
        &mut out,
        "readers whose SQL fails against the live tables (already broken, or declared wrong; not checked):",
        "",
        &plan.unplanned_readers,
    );
    out
}

/// A titled list of queries that do not plan, each as `name (file:line): message`.
fn failure_list(out: &mut String, title: &str, mark: &str, failures: &[Failure]) {
    if failures.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}");
    for f in failures {
        let line = f.line.map(|l| format!(":{l}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {mark}{} ({}{line}): {}",
            f.name,
            f.file.display(),
            f.message
        );
    }
}

fn describe(kind: &ChangeKind) -> String {
    match kind {
        ChangeKind::Added { column, ty } => format!("column {column} added ({ty})"),
        ChangeKind::Dropped { column } => format!("column {column} dropped"),
        ChangeKind::Renamed { from, to } => {
            format!("column {from} renamed to {to} (same field id: history keeps its values)")
        }
        ChangeKind::Widened { column, from, to } => {
            format!("column {column} widened {from} -> {to}")
        }
        ChangeKind::Retyped { column, from, to } => {
            format!("column {column} changes type {from} -> {to} (not a safe widening)")
        }
    }
}

fn describe_break(b: &Break) -> String {
    match b {
        Break::Sql {
            table,
            sql,
            lines,
            column,
        } => {
            let at = match lines.as_slice() {
                [] => String::new(),
                [one] => format!(":{one}"),
                many => format!(
                    ":{}",
                    many.iter()
                        .map(|l| l.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            };
            format!("transform {table}: {}{at} uses {column}", sql.display())
        }
        Break::Column { column, from } => format!("column {column} (computed from {from})"),
        Break::Reader {
            name,
            owner,
            reader_kind,
            declared,
            columns,
        } => {
            let kind = reader_kind
                .as_ref()
                .map(|k| format!(" ({k})"))
                .unwrap_or_default();
            let owner = owner
                .as_ref()
                .map(|o| format!(", owner {o}"))
                .unwrap_or_default();
            format!(
                "reader \"{name}\"{kind}{owner}: uses {} [declared at {declared}]",
                columns.join(", ")
            )
        }
    }
}
