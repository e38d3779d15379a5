//! Which tables of the catalog a command shows need maintenance, from the project's
//! pipelines that write to it (`pipeline tables`).

use std::path::Path;

use crate::catalog::PipelineCatalog;
use crate::maintain::{due, Due};
use crate::spec::{list_pipelines, load_with_catalog};

/// The tables on `catalog` that `pipeline` (or every pipeline of the project writing there)
/// writes and that need maintenance now. A pipeline whose plan cannot be made (its spec does
/// not load, a table cannot be read) is skipped with a warning: the listing goes on.
pub async fn maintenance_due(
    project: &Path,
    catalog_name: Option<&str>,
    pipeline: &Option<String>,
    catalog: &PipelineCatalog,
) -> Vec<Due> {
    let names = match pipeline {
        Some(p) => vec![p.clone()],
        None => list_pipelines(project),
    };
    let mut all = Vec::new();
    for name in names {
        let spec = match load_with_catalog(project, &name, catalog_name) {
            Ok(spec) if catalog.is(&spec.catalog) => spec,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(pipeline = %name, "cannot tell whether its tables need maintenance: {e}");
                continue;
            }
        };
        match due(catalog, &spec).await {
            Ok(found) => all.extend(found),
            Err(e) => {
                tracing::warn!(pipeline = %name, "cannot tell whether its tables need maintenance: {e}")
            }
        }
    }
    all
}
