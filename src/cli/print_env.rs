//! The printers of `pipeline env list`, `diff`, `publish` and `drop`.

use super::print::json;
use crate::env::{EnvChange, EnvSummary, TableDiff};
use crate::output::render_table;
use crate::output::Rows;

/// `pipeline env list`: one row per environment and table.
pub fn list(envs: &[EnvSummary], as_json: bool) {
    if as_json {
        return json(&envs);
    }
    if envs.is_empty() {
        say!("no environments: `pipeline run PIPELINE --env NAME` makes one");
        return;
    }
    let rows: Vec<Vec<String>> = envs
        .iter()
        .flat_map(|e| {
            e.tables
                .iter()
                .map(|(table, head)| vec![e.env.clone(), table.clone(), head.to_string()])
        })
        .collect();
    let header = ["environment", "table", "branch head"].map(String::from);
    say_raw!("{}", render_table(&header, &rows));
}

/// `pipeline env drop`: what was removed.
pub fn dropped(done: &EnvChange, as_json: bool) {
    if as_json {
        return json(done);
    }
    say!(
        "environment {} dropped: its branch of {} removed ({}); main did not move",
        done.env,
        done.tables.len(),
        done.tables.join(", ")
    );
}

/// `pipeline env publish`: which tables' `main` moved, and the record that undoes it.
pub fn published(done: &EnvChange, as_json: bool) {
    if as_json {
        return json(done);
    }
    match &done.run_id {
        None => say!(
            "environment {}: main already holds everything it changed; nothing was published",
            done.env
        ),
        Some(run) => say!(
            "environment {} published: main of {} moved to its branch ({}), in one publish; undo with pipeline rollback {run}",
            done.env,
            done.tables.len(),
            done.tables.join(", ")
        ),
    }
}

/// `pipeline env diff`: per table, what differs, with samples of the rows each side alone has.
pub fn diff(diffs: &[TableDiff], env: &str, as_json: bool) {
    if as_json {
        return json(&diffs);
    }
    let differ: Vec<&TableDiff> = diffs.iter().filter(|d| d.differs()).collect();
    if differ.is_empty() {
        say!("environment {env} holds the same rows as main");
        return;
    }
    for d in differ {
        let changed = match d.key.is_empty() {
            true => String::new(),
            false => format!(", {} changed (by {})", d.changed, d.key.join(", ")),
        };
        say!(
            "{}: {} rows on main, {} in {env}; {} added, {} removed{changed}",
            d.table,
            d.main_rows,
            d.env_rows,
            d.added,
            d.removed
        );
        say!(
            "  read {} data file(s) one side alone has; {} both have were not read",
            d.files_read,
            d.files_skipped
        );
        for change in &d.schema {
            say!("  schema: {change}");
        }
        diff_details(d);
        for (what, rows) in [("added", &d.sample_added), ("removed", &d.sample_removed)] {
            if rows.is_empty() {
                continue;
            }
            say!("  {what} (first {}):", rows.len());
            let table = Rows {
                columns: d.columns.clone(),
                rows: rows.clone(),
            };
            for line in table.to_table().lines() {
                say!("    {line}");
            }
        }
    }
}

/// The partitions and changed columns of one table's diff, and samples of changed rows.
fn diff_details(d: &TableDiff) {
    if d.partitions.len() > 1 || d.partitions.iter().any(|p| !p.partition.is_empty()) {
        for p in &d.partitions {
            say!(
                "  {}: {} added, {} removed, {} changed",
                p.partition,
                p.counts.added,
                p.counts.removed,
                p.counts.changed
            );
        }
    }
    if !d.changed_columns.is_empty() {
        let columns: Vec<String> = d
            .changed_columns
            .iter()
            .map(|(c, n)| format!("{c} ({n})"))
            .collect();
        say!("  changed columns: {}", columns.join(", "));
    }
    if !d.sample_changed.is_empty() {
        say!("  changed (first {}):", d.sample_changed.len());
    }
    for row in &d.sample_changed {
        let key: Vec<&str> = row
            .key
            .iter()
            .map(|v| v.as_deref().unwrap_or("NULL"))
            .collect();
        let changes: Vec<String> = row
            .changes
            .iter()
            .map(|c| {
                format!(
                    "{}: {} -> {}",
                    c.column,
                    c.main.as_deref().unwrap_or("NULL"),
                    c.env.as_deref().unwrap_or("NULL")
                )
            })
            .collect();
        say!("    {}  {}", key.join(", "), changes.join("; "));
    }
}
