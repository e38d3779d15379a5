//! What `env publish NAME --rebase` checks before it runs environment NAME again on top of
//! `main`: which tables' `main` moved since the branch was made ([`diverged`]), and that no
//! row edit made in the environment (`pipeline sql --env NAME`) would be lost by starting its
//! branches again from `main` ([`refuse_lost_edits`]): a run recomputes what the project's SQL
//! gives, but an edit is not in the SQL.

use std::collections::HashMap;

use crate::catalog::{env, PipelineCatalog};
use crate::error::{Error, Result};
use crate::records::RunKind;
use crate::spec::Pipeline;

use super::publish::descends;

/// The tables of `pipeline` whose branch `name` does not descend from their `main` (`main`
/// moved since the branch was made), by name.
pub async fn diverged(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    name: &str,
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for table in pipeline.tables_written() {
        let Some(loaded) = catalog.load(&table).await? else {
            continue;
        };
        let metadata = loaded.metadata();
        let head = env::env_branches(metadata)?
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, head)| head);
        if let Some(head) = head {
            if !descends(metadata, head, metadata.current_snapshot_id()) {
                out.push(table.to_string());
            }
        }
    }
    Ok(out)
}

/// Refuses, naming them, when row edits (`pipeline sql --env NAME`) are on the current
/// branches of environment `name`: starting the branches again would lose them.
pub async fn refuse_lost_edits(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    name: &str,
) -> Result<()> {
    // Each table with the branch, loaded once: its metadata and the branch's head.
    let mut branches = HashMap::new();
    for table in pipeline.tables_written() {
        let Some(loaded) = catalog.load(&table).await? else {
            continue;
        };
        let head = env::env_branches(loaded.metadata())?
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, head)| head);
        if let Some(head) = head {
            branches.insert(table.to_string(), (loaded, head));
        }
    }
    let mut edits = Vec::new();
    for record in catalog.runs().await? {
        if record.kind != RunKind::Sql || record.env.as_deref() != Some(name) {
            continue;
        }
        for entry in &record.tables {
            let (Some((loaded, head)), Some(after)) =
                (branches.get(&entry.table), entry.snapshot_after)
            else {
                continue;
            };
            if descends(loaded.metadata(), *head, Some(after)) {
                edits.push(format!("{} ({})", record.run_id, entry.table));
            }
        }
    }
    if edits.is_empty() {
        return Ok(());
    }
    Err(Error::Failed(format!(
        "--rebase would start environment `{name}` again from main and lose its row edits {}: nothing was changed; publish without --rebase after making them again on top of main (`pipeline env drop`, `pipeline run --env {name}`, `pipeline sql --env {name}`)",
        edits.join(", ")
    )))
}
