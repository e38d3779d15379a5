//! The one operation `env publish` and `env drop` run on the skeleton: under the pipeline's
//! lock, every table of the pipeline that has branch NAME gets the command's move (its
//! [`EnvAction`]), all published together with one record; an environment no table has, or
//! a table the command cannot move, refuses the whole command before anything is published.

use std::collections::BTreeSet;
use std::sync::Arc;

use iceberg::table::Table;
use serde::Serialize;

use crate::catalog::{env, PipelineCatalog};
use crate::commit::publish::{Publication, TableChange};
use crate::error::{Error, Result};
use crate::operation::{
    operate, Identity, Observer, Opened, Opening, RunStart, Staging, TableOperation,
};
use crate::records::{Invocation, RunKind, RunRecord, TableRecord};
use crate::spec::{Pipeline, TableName};

/// What an `env` command changed.
#[derive(Debug, Clone, Serialize)]
pub struct EnvChange {
    pub env: String,
    /// The tables moved.
    pub tables: Vec<String>,
    /// Its record; `None` when nothing needed moving.
    pub run_id: Option<String>,
}

/// What a command does to one table that has the environment's branch.
pub(super) enum Move {
    /// This change, recorded so.
    Change(Box<(TableChange, TableRecord)>),
    /// Nothing to do for this table.
    Same,
    /// The table cannot be moved: the whole command is refused, naming it.
    Refused,
}

/// An `env` command's part: what it does to each table, and how a refusal reads.
pub(super) trait EnvAction: Send + Sync {
    /// The move of `table` (loaded as `main` has it) whose branch is at `head`.
    fn table_move(&self, env: &str, table: &TableName, loaded: &Table, head: i64) -> Result<Move>;
    /// The error naming the tables [`Move::Refused`] was answered for.
    fn refusal(&self, env: &str, pipeline: &str, tables: &[String]) -> Error;
    /// Whether the record is the environment's (`main` did not move: nothing to undo there).
    fn records_env(&self) -> bool;
}

/// Runs `action` on environment `name` of `pipeline`.
pub(super) async fn run_env_action(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    name: &str,
    invocation: &Invocation,
    action: &dyn EnvAction,
    observer: Arc<dyn Observer>,
) -> Result<EnvChange> {
    if !env::valid_env_name(name) {
        return Err(Error::Usage(format!(
            "`{name}` is not an environment name: letters, digits, `_` and `-`, not `main`"
        )));
    }
    let operation = EnvOperation {
        catalog,
        pipeline,
        name,
        invocation,
        action,
        changes: Vec::new(),
    };
    operate(operation, observer).await
}

struct EnvOperation<'a> {
    catalog: &'a PipelineCatalog,
    pipeline: &'a Pipeline,
    name: &'a str,
    invocation: &'a Invocation,
    action: &'a dyn EnvAction,
    changes: Vec<(TableChange, TableRecord)>,
}

impl EnvOperation<'_> {
    fn summary(&self, record: Option<RunRecord>) -> EnvChange {
        EnvChange {
            env: self.name.to_string(),
            tables: self.changes.iter().map(|(_, r)| r.table.clone()).collect(),
            run_id: record.map(|r| r.run_id),
        }
    }
}

impl<'a> TableOperation<'a> for EnvOperation<'a> {
    type Staged = ();
    type Output = EnvChange;

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
    ) -> Result<Staging<(), EnvChange>> {
        let (mut envs, mut refused) = (BTreeSet::new(), Vec::new());
        for table in self.pipeline.tables_written() {
            let Some(loaded) = opened.catalog.load(&table).await? else {
                continue;
            };
            let branches = env::env_branches(loaded.metadata())?;
            envs.extend(branches.iter().map(|(n, _)| n.clone()));
            let Some((_, head)) = branches.into_iter().find(|(n, _)| n == self.name) else {
                continue;
            };
            match self.action.table_move(self.name, &table, &loaded, head)? {
                Move::Change(change) => self.changes.push(*change),
                Move::Same => {}
                Move::Refused => refused.push(table.to_string()),
            }
        }
        if !envs.contains(self.name) {
            let there = envs.into_iter().collect::<Vec<_>>().join(", ");
            return Err(Error::Usage(format!(
                "no table of pipeline `{}` has environment `{}`; environments: {}",
                self.pipeline.name,
                self.name,
                if there.is_empty() { "none" } else { &there }
            )));
        }
        if !refused.is_empty() {
            return Err(self
                .action
                .refusal(self.name, &self.pipeline.name, &refused));
        }
        if self.changes.is_empty() {
            return Ok(Staging::Done(self.summary(None)));
        }
        Ok(Staging::Publish(()))
    }

    async fn publication(
        &mut self,
        _catalog: &PipelineCatalog,
        _staged: &mut (),
        mut record: RunRecord,
    ) -> Result<Option<Publication>> {
        if self.action.records_env() {
            record.env = Some(self.name.to_string());
        }
        let tables = self.changes.iter().map(|(_, r)| r.clone()).collect();
        Ok(Some(Publication {
            changes: self.changes.iter().map(|(c, _)| c.clone()).collect(),
            record: Some(record.with_tables(tables)),
        }))
    }

    async fn finish(
        self,
        _opened: Opened<'a>,
        _staged: (),
        record: Option<RunRecord>,
        _observer: Arc<dyn Observer>,
    ) -> Result<EnvChange> {
        Ok(self.summary(record))
    }
}
