//! The printers of `pipeline env list`, `publish` and `drop`.

use super::print::json;
use crate::env::{DroppedEnv, EnvSummary, PublishedEnv};
use crate::output::render_table;

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
pub fn dropped(done: &DroppedEnv, as_json: bool) {
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
pub fn published(done: &PublishedEnv, as_json: bool) {
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
