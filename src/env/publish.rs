//! `pipeline env publish NAME`: `main` of every table environment NAME changed fast-forwards
//! to the branch's head, all in one publish with a record that `pipeline rollback` undoes.
//! When `main` of a table moved since the branch was made (the branch does not descend from
//! it), nothing is published and the tables are named.

use std::sync::Arc;

use iceberg::spec::{SnapshotReference, SnapshotRetention, TableMetadata, MAIN_BRANCH};
use iceberg::table::Table;

use super::operation::{run_env_action, EnvAction, EnvChange, Move};
use crate::catalog::PipelineCatalog;
use crate::commit::publish::TableChange;
use crate::commit::summary::total_records;
use crate::error::{Error, Result};
use crate::operation::Observer;
use crate::records::{Invocation, TableRecord};
use crate::spec::{Pipeline, TableName};

/// Fast-forwards `main` of each table of `pipeline` to its branch `name`, in one publish.
pub async fn publish_env(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    name: &str,
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
) -> Result<EnvChange> {
    run_env_action(catalog, pipeline, name, invocation, &FastForward, observer).await
}

/// Whether `head` descends from `main` (or is it): `main` can fast-forward to it.
pub(super) fn descends(metadata: &TableMetadata, head: i64, main: Option<i64>) -> bool {
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

struct FastForward;

impl EnvAction for FastForward {
    fn table_move(&self, name: &str, table: &TableName, loaded: &Table, head: i64) -> Result<Move> {
        let metadata = loaded.metadata();
        let main = metadata.current_snapshot_id();
        if main == Some(head) {
            return Ok(Move::Same);
        }
        if !descends(metadata, head, main) {
            return Ok(Move::Refused);
        }
        let location = loaded.metadata_location().map(str::to_string);
        let branch = SnapshotRetention::branch(None, None, None);
        let mut builder = metadata
            .clone()
            .into_builder(location.clone())
            .set_ref(MAIN_BRANCH, SnapshotReference::new(head, branch))?;
        // The environment's schema (its head's) becomes the table's.
        if let Some(schema) = metadata.snapshot_by_id(head).and_then(|s| s.schema_id()) {
            builder = builder.set_current_schema(schema)?;
        }
        let published = builder.build()?.metadata;
        Ok(Move::Change(Box::new((
            TableChange {
                table: table.clone(),
                expected_location: location,
                metadata: Some(published),
            },
            TableRecord {
                table: table.to_string(),
                operation: format!("publish {name}"),
                partitions: None,
                snapshot_before: main,
                snapshot_after: Some(head),
                rows: total_records(metadata.snapshot_by_id(head)),
                expired: None,
                dropped_metadata: None,
            },
        ))))
    }

    fn refusal(&self, env: &str, pipeline: &str, tables: &[String]) -> Error {
        Error::Failed(format!(
            "main moved since environment `{env}` was made, in {}: nothing was published; `pipeline env publish {pipeline} {env} --rebase` runs the environment again on top of main (from the project's SQL as it is now) and publishes it",
            tables.join(", ")
        ))
    }

    fn records_env(&self) -> bool {
        false
    }
}
