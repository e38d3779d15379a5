//! `pipeline env drop NAME`: every branch NAME of the pipeline's tables removed in one
//! publish, under the pipeline's lock, recorded as the environment's. `main` does not move;
//! the branch's snapshots and files go with the next expiry of `main`'s maintenance.

use std::sync::Arc;

use iceberg::table::Table;

use super::operation::{run_env_action, EnvAction, EnvChange, Move};
use crate::catalog::{env, PipelineCatalog};
use crate::commit::publish::TableChange;
use crate::error::{Error, Result};
use crate::operation::Observer;
use crate::records::{Invocation, TableRecord};
use crate::spec::{Pipeline, TableName};

/// Removes branch `name` from every table of `pipeline` that has it, in one publish with a
/// record of kind `env`. An environment no table has is a usage error naming the ones there are.
pub async fn drop_env(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    name: &str,
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
) -> Result<EnvChange> {
    run_env_action(catalog, pipeline, name, invocation, &DropBranch, observer).await
}

struct DropBranch;

impl EnvAction for DropBranch {
    fn table_move(
        &self,
        name: &str,
        table: &TableName,
        loaded: &Table,
        _head: i64,
    ) -> Result<Move> {
        let main = loaded.metadata().current_snapshot_id();
        Ok(Move::Change(Box::new((
            TableChange {
                table: table.clone(),
                expected_location: loaded.metadata_location().map(str::to_string),
                metadata: Some(env::without_branch(loaded.metadata(), name)?),
            },
            TableRecord {
                table: table.to_string(),
                operation: format!("drop branch {name}"),
                partitions: None,
                snapshot_before: main,
                snapshot_after: main,
                rows: 0,
                expired: None,
                dropped_metadata: None,
            },
        ))))
    }

    fn refusal(&self, _env: &str, _pipeline: &str, tables: &[String]) -> Error {
        Error::Internal(format!("a branch drop refused for {}", tables.join(", ")))
    }

    fn records_env(&self) -> bool {
        true
    }
}
