//! `pipeline env publish NAME`: `main` of every table environment NAME changed fast-forwards
//! to the branch's head, all in one publish with a record that `pipeline rollback` undoes.
//! When `main` of a table moved since the branch was made (the branch does not descend from
//! it), nothing is published and the tables are named.

use std::sync::Arc;

use iceberg::spec::{SnapshotReference, SnapshotRetention, TableMetadata, MAIN_BRANCH};
use serde::Serialize;

use crate::catalog::{env, PipelineCatalog};
use crate::commit::publish::{Publication, TableChange};
use crate::commit::summary::total_records;
use crate::error::{Error, Result};
use crate::operation::{
    operate, Identity, Observer, Opened, Opening, RunStart, Staging, TableOperation,
};
use crate::records::{Invocation, RunKind, RunRecord, TableRecord};
use crate::spec::Pipeline;

/// What publishing an environment did.
#[derive(Debug, Clone, Serialize)]
pub struct PublishedEnv {
    pub env: String,
    /// The tables whose `main` moved to the branch's head.
    pub tables: Vec<String>,
    /// The record (`pipeline rollback RUN` undoes the publish); `None` when nothing differed.
    pub run_id: Option<String>,
}

/// Fast-forwards `main` of each table of `pipeline` to its branch `name`, in one publish.
pub async fn publish_env(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    name: &str,
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
) -> Result<PublishedEnv> {
    if !env::valid_env_name(name) {
        return Err(Error::Usage(format!(
            "`{name}` is not an environment name: letters, digits, `_` and `-`, not `main`"
        )));
    }
    let operation = PublishEnv {
        catalog,
        pipeline,
        name,
        invocation,
        changes: Vec::new(),
    };
    operate(operation, observer).await
}

struct PublishEnv<'a> {
    catalog: &'a PipelineCatalog,
    pipeline: &'a Pipeline,
    name: &'a str,
    invocation: &'a Invocation,
    changes: Vec<(TableChange, TableRecord)>,
}

/// Whether `head` descends from `main` (or is it): `main` can fast-forward to it.
fn descends(metadata: &TableMetadata, head: i64, main: Option<i64>) -> bool {
    let Some(main) = main else {
        return true;
    };
    let mut at = Some(head);
    while let Some(id) = at {
        if id == main {
            return true;
        }
        at = metadata
            .snapshot_by_id(id)
            .and_then(|s| s.parent_snapshot_id());
    }
    false
}

impl<'a> TableOperation<'a> for PublishEnv<'a> {
    type Staged = ();
    type Output = PublishedEnv;

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
    ) -> Result<Staging<(), PublishedEnv>> {
        let (mut moved, mut found) = (Vec::new(), false);
        for table in self.pipeline.tables_written() {
            let Some(loaded) = opened.catalog.load(&table).await? else {
                continue;
            };
            let metadata = loaded.metadata();
            let branches = env::env_branches(metadata)?;
            let Some((_, head)) = branches.iter().find(|(n, _)| n == self.name) else {
                continue;
            };
            found = true;
            let main = metadata.current_snapshot_id();
            if main == Some(*head) {
                continue;
            }
            if !descends(metadata, *head, main) {
                moved.push(table.to_string());
                continue;
            }
            let location = loaded.metadata_location().map(str::to_string);
            let published = metadata
                .clone()
                .into_builder(location.clone())
                .set_ref(
                    MAIN_BRANCH,
                    SnapshotReference::new(*head, SnapshotRetention::branch(None, None, None)),
                )?
                .build()?
                .metadata;
            let record = TableRecord {
                table: table.to_string(),
                operation: format!("publish {}", self.name),
                partitions: None,
                snapshot_before: main,
                snapshot_after: Some(*head),
                rows: total_records(metadata.snapshot_by_id(*head)),
                expired: None,
                dropped_metadata: None,
            };
            let change = TableChange {
                table,
                expected_location: location,
                metadata: Some(published),
            };
            self.changes.push((change, record));
        }
        if !found {
            return Err(Error::Usage(format!(
                "no table of pipeline `{}` has environment `{}` (`pipeline env list {}`)",
                self.pipeline.name, self.name, self.pipeline.name
            )));
        }
        if !moved.is_empty() {
            return Err(Error::Failed(format!(
                "main moved since environment `{}` was made, in {}: nothing was published; run the environment again on top of main (`pipeline run {} --env {}` after `pipeline env drop`), then publish",
                self.name,
                moved.join(", "),
                self.pipeline.name,
                self.name
            )));
        }
        if self.changes.is_empty() {
            return Ok(Staging::Done(PublishedEnv {
                env: self.name.to_string(),
                tables: Vec::new(),
                run_id: None,
            }));
        }
        Ok(Staging::Publish(()))
    }

    async fn publication(
        &mut self,
        _catalog: &PipelineCatalog,
        _staged: &mut (),
        record: RunRecord,
    ) -> Result<Option<Publication>> {
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
    ) -> Result<PublishedEnv> {
        Ok(PublishedEnv {
            env: self.name.to_string(),
            tables: self.changes.iter().map(|(_, r)| r.table.clone()).collect(),
            run_id: record.map(|r| r.run_id),
        })
    }
}
