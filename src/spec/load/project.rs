//! The pipelines of a project folder: listing them, loading one by name (optionally switched to
//! one of its `[catalogs.NAME]`), and finding the one that writes a table.

use std::path::Path;

use super::file::load_pipeline_file;
use crate::error::{Error, Result};
use crate::spec::pipeline::Pipeline;
use crate::spec::table::TableName;

/// Lists the pipelines of a project (the stems of `pipelines/*.toml`), sorted.
pub fn list_pipelines(project_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(project_dir.join("pipelines"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    names
}

/// Loads `pipelines/NAME.toml` of a project and the SQL files it names; when no spec file has
/// that name, the one spec whose `[pipeline] name` is `name` (what run records and undo
/// commands name).
pub fn load_pipeline(project_dir: &Path, name: &str) -> Result<Pipeline> {
    let file = project_dir.join("pipelines").join(format!("{name}.toml"));
    if !file.exists() {
        if let Some(spec) = named_inside(project_dir, name)? {
            return Ok(spec);
        }
        let known = list_pipelines(project_dir);
        return Err(Error::Pipeline {
            file,
            message: format!("no pipeline named `{name}`"),
            hint: Some(if known.is_empty() {
                format!(
                    "no pipelines/*.toml under {}; pass --project DIR",
                    project_dir.display()
                )
            } else {
                format!("pipelines here: {}", known.join(", "))
            }),
        });
    }
    load_pipeline_file(project_dir, &file)
}

/// The one spec of the project whose `[pipeline] name` is `name` (its file named otherwise).
fn named_inside(project_dir: &Path, name: &str) -> Result<Option<Pipeline>> {
    let mut found = Vec::new();
    for stem in list_pipelines(project_dir) {
        let file = project_dir.join("pipelines").join(format!("{stem}.toml"));
        // A spec that does not load is not the one asked for; it is reported when named.
        if let Ok(spec) = load_pipeline_file(project_dir, &file) {
            if spec.name == name {
                found.push(spec);
            }
        }
    }
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(Error::Usage(format!(
            "specs {} all name their pipeline `{name}`; pass the spec file's name instead",
            found
                .iter()
                .map(|s| s.file.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The `[pipeline] name` of every spec under `pipelines/` (sorted, each once): the run locks a
/// command that deletes files takes, whatever the spec files are called. A spec that does not
/// load is an error naming it (its pipeline's lock cannot be known).
pub fn pipeline_names(project_dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for stem in list_pipelines(project_dir) {
        let file = project_dir.join("pipelines").join(format!("{stem}.toml"));
        let spec = load_pipeline_file(project_dir, &file).map_err(|e| Error::Pipeline {
            file: file.clone(),
            message: format!(
                "cannot read this spec, so its pipeline's run lock cannot be taken: {e}"
            ),
            hint: Some("fix it, or move it out of pipelines/, before deleting files".into()),
        })?;
        names.push(spec.name);
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// Loads pipeline `name`, switched to its `[catalogs.CATALOG]` when `catalog` is given (the
/// `--catalog NAME` option of every command).
pub fn load_with_catalog(
    project_dir: &Path,
    name: &str,
    catalog: Option<&str>,
) -> Result<Pipeline> {
    let mut spec = load_pipeline(project_dir, name)?;
    if let Some(c) = catalog {
        spec.use_catalog(c)?;
    }
    Ok(spec)
}

/// The one pipeline of the project that writes `table` (its quarantine table included).
/// Errors when none does, or when several do.
pub fn producer_of(project_dir: &Path, table: &TableName) -> Result<String> {
    let mut found = Vec::new();
    for name in list_pipelines(project_dir) {
        let spec = load_pipeline(project_dir, &name)?;
        let writes = spec
            .ingests
            .iter()
            .any(|j| j.table == *table || (j.table.quarantine() == *table))
            || spec.transforms.iter().any(|j| j.table == *table);
        if writes {
            found.push(name);
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(Error::Usage(format!(
            "no pipeline in {}/pipelines writes {table}",
            project_dir.display()
        ))),
        _ => Err(Error::Usage(format!(
            "pipelines {} all write {table}; add --pipeline NAME",
            found.join(", ")
        ))),
    }
}
