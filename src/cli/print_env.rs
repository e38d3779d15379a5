//! The printers of `pipeline env list` and `pipeline env drop`.

use super::print::json;
use crate::env::{DroppedEnv, EnvSummary};
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
