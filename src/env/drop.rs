//! `pipeline env drop NAME`: every branch NAME of the pipeline's tables removed in one
//! publish, under the pipeline's lock, recorded. `main` does not move; the branch's snapshots
//! and files go with the next expiry of `main`'s maintenance.

use std::sync::Arc;

use serde::Serialize;

use crate::catalog::{env, PipelineCatalog};
use crate::commit::publish::{Publication, TableChange};
use crate::error::{Error, Result};
use crate::operation::{
    operate, Identity, Observer, Opened, Opening, RunStart, Staging, TableOperation,
};
use crate::records::{Invocation, RunKind, RunRecord, TableRecord};
use crate::spec::Pipeline;

/// What dropping an environment did.
#[derive(Debug, Clone, Serialize)]
pub struct DroppedEnv {
    pub env: String,
    /// The tables whose branch was removed.
    pub tables: Vec<String>,
    pub run_id: Option<String>,
}

/// Removes branch `name` from every table of `pipeline` that has it, in one publish with a
/// record of kind `env`. An environment no table has is a usage error naming the ones there are.
pub async fn drop_env(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    name: &str,
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
) -> Result<DroppedEnv> {
    if !env::valid_env_name(name) {
        return Err(Error::Usage(format!(
            "`{name}` is not an environment name: letters, digits, `_` and `-`, not `main`"
        )));
    }
    let operation = DropEnv {
        catalog,
        pipeline,
        name,
        invocation,
        changes: Vec::new(),
    };
    operate(operation, observer).await
}

struct DropEnv<'a> {
    catalog: &'a PipelineCatalog,
    pipeline: &'a Pipeline,
    name: &'a str,
    invocation: &'a Invocation,
    /// Per table: its change and its record.
    changes: Vec<(TableChange, TableRecord)>,
}

impl<'a> TableOperation<'a> for DropEnv<'a> {
    type Staged = ();
    type Output = DroppedEnv;

    fn opening(&self) -> Opening<'a> {
        Opening::Pipeline {
            catalog: self.catalog,
            pipeline: &self.pipeline.name,
        }
    }

    fn identity(&self) -> Identity<'_> {
        Identity::new(RunKind::Env, &self.pipeline.name, self.invocation)
    }

    async fn stage(
        &mut self,
        opened: &Opened<'a>,
        _run: &RunStart,
        _observer: &Arc<dyn Observer>,
    ) -> Result<Staging<(), DroppedEnv>> {
        let mut others = std::collections::BTreeSet::new();
        for table in self.pipeline.tables_written() {
            let Some(loaded) = opened.catalog.load(&table).await? else {
                continue;
            };
            let branches = env::env_branches(loaded.metadata())?;
            others.extend(branches.iter().map(|(n, _)| n.clone()));
            if !branches.iter().any(|(n, _)| n == self.name) {
                continue;
            }
            let main = loaded.metadata().current_snapshot_id();
            self.changes.push((
                TableChange {
                    table: table.clone(),
                    expected_location: loaded.metadata_location().map(str::to_string),
                    metadata: Some(env::without_branch(loaded.metadata(), self.name)?),
                },
                TableRecord {
                    table: table.to_string(),
                    operation: format!("drop branch {}", self.name),
                    partitions: None,
                    snapshot_before: main,
                    snapshot_after: main,
                    rows: 0,
                    expired: None,
                    dropped_metadata: None,
                },
            ));
        }
        if self.changes.is_empty() {
            let there = others.into_iter().collect::<Vec<_>>().join(", ");
            return Err(Error::Usage(format!(
                "no table of pipeline `{}` has environment `{}`; environments: {}",
                self.pipeline.name,
                self.name,
                if there.is_empty() { "none" } else { &there }
            )));
        }
        Ok(Staging::Publish(()))
    }

    async fn publication(
        &mut self,
        _catalog: &PipelineCatalog,
        _staged: &mut (),
        mut record: RunRecord,
    ) -> Result<Option<Publication>> {
        record.env = Some(self.name.to_string());
        let tables = self.changes.iter().map(|(_, r)| r.clone()).collect();
        let changes = self
            .changes
            .iter()
            .map(|(c, _)| TableChange {
                table: c.table.clone(),
                expected_location: c.expected_location.clone(),
                metadata: c.metadata.clone(),
            })
            .collect();
        Ok(Some(Publication {
            changes,
            record: Some(record.with_tables(tables)),
        }))
    }

    async fn finish(
        self,
        _opened: Opened<'a>,
        _staged: (),
        record: Option<RunRecord>,
        _observer: Arc<dyn Observer>,
    ) -> Result<DroppedEnv> {
        Ok(DroppedEnv {
            env: self.name.to_string(),
            tables: self.changes.iter().map(|(_, r)| r.table.clone()).collect(),
            run_id: record.map(|r| r.run_id),
        })
    }
}
