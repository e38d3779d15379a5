//! `pipeline env list`: the environments of a pipeline's tables, from their branches.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::catalog::{env::env_branches, PipelineCatalog};
use crate::error::Result;
use crate::spec::Pipeline;

/// One environment: the tables that have its branch, with each branch's head.
#[derive(Debug, Clone, Serialize)]
pub struct EnvSummary {
    pub env: String,
    /// Table -> the snapshot its branch points at.
    #[serde(serialize_with = "crate::id_text::map::serialize")]
    pub tables: BTreeMap<String, i64>,
}

/// Every environment of `pipeline`'s tables on `catalog` (read from `main`'s catalog entry of
/// each table: nothing is written), by name.
pub async fn list_envs(catalog: &PipelineCatalog, pipeline: &Pipeline) -> Result<Vec<EnvSummary>> {
    let mut envs: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for table in pipeline.tables_written() {
        let Some(loaded) = catalog.load(&table).await? else {
            continue;
        };
        for (env, head) in env_branches(loaded.metadata())? {
            envs.entry(env).or_default().insert(table.to_string(), head);
        }
    }
    Ok(envs
        .into_iter()
        .map(|(env, tables)| EnvSummary { env, tables })
        .collect())
}
