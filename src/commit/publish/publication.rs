//! What a publish is: a set of table changes ([`TableChange`]) moved together with the run
//! record that describes them ([`Publication`]), by a [`Publisher`] of the catalog's kind,
//! all of them or (on a conflict) none.

use async_trait::async_trait;
use iceberg::spec::{TableMetadata, MAIN_BRANCH};

use crate::catalog::RemoteCatalog;
use crate::commit::staged::StagedTable;
use crate::error::{Error, Result};
use crate::records::RunRecord;
use crate::spec::TableName;

/// One table's move in a publish.
#[derive(Clone)]
pub struct TableChange {
    pub table: TableName,
    /// The metadata location the change was staged on; `None` creates the table.
    pub expected_location: Option<String>,
    /// The metadata to publish (its `main` branch already points at the new snapshot), or
    /// `None` to drop the table from the catalog (its files stay, for time travel by path).
    pub metadata: Option<TableMetadata>,
}

impl TableChange {
    /// The change that publishes a staged table: `main` moves to its staged snapshot, from
    /// the metadata location the run staged it on.
    /// In environment `env` (see `catalog::env`) the table's branch of that name moves
    /// instead, and `main` stays.
    pub fn publish(staged: StagedTable, env: Option<&str>) -> Result<TableChange> {
        let metadata = crate::catalog::env::publishable(staged.published_metadata()?, env)?;
        Ok(TableChange {
            metadata: Some(metadata),
            table: staged.table,
            expected_location: staged.base_location,
        })
    }
}

/// A set of table changes published together, with the record that describes them.
#[derive(Default)]
pub struct Publication {
    pub changes: Vec<TableChange>,
    /// Written in the same transaction as the pointer moves.
    pub record: Option<RunRecord>,
}

impl Publication {
    /// The error for a publish refused because another writer moved the tables of the changes
    /// at `conflicts` first: it names the first, and says whether it was moved or created.
    pub fn conflict(&self, conflicts: &[usize]) -> Error {
        let Some(change) = conflicts.first().and_then(|&i| self.changes.get(i)) else {
            return Error::Internal("a conflict without a change".into());
        };
        Error::Conflict {
            table: change.table.to_string(),
            message: match change.expected_location {
                Some(_) => "another writer committed to it after this command read it",
                None => "another writer created it after this command started",
            }
            .into(),
        }
    }
}

/// What an attempt to publish did.
pub enum PublishOutcome {
    /// Every pointer moved; the new metadata location of each table, in order.
    Published(Vec<String>),
    /// Nothing moved: the changes (by index) whose table another writer moved first.
    Conflicts(Vec<usize>),
}

/// How a catalog publishes a set of table changes: all of them, or (on a conflict) none.
#[async_trait]
pub trait Publisher: Send + Sync {
    /// Publishes every change at once, or (when another writer moved any of the tables since
    /// the change was staged) nothing, reporting every such table.
    async fn try_publish(&self, publication: &Publication) -> Result<PublishOutcome>;
}

/// A change's base on a remote catalog (its metadata location and metadata) and the metadata
/// it moves the table to. A change without metadata (the embedded catalog's drop) empties the
/// table.
pub(super) async fn versions_of(
    remote: &RemoteCatalog,
    change: &TableChange,
) -> Result<(String, TableMetadata, TableMetadata)> {
    let Some(base_location) = &change.expected_location else {
        return Err(Error::Internal(format!(
            "{}: a remote catalog's table must exist before its first publish",
            change.table
        )));
    };
    let base = remote.read_metadata(base_location).await?;
    let new = match &change.metadata {
        Some(m) => m.clone(),
        None => emptied(&base, base_location)?,
    };
    Ok((base_location.clone(), base, new))
}

/// The current metadata location on a remote catalog of each changed table, in order.
pub(super) async fn locations(
    remote: &RemoteCatalog,
    changes: &[TableChange],
) -> Result<Vec<String>> {
    let tables: Vec<&TableName> = changes.iter().map(|c| &c.table).collect();
    let now = remote.current_locations(&tables).await?;
    Ok(now.into_iter().map(Option::unwrap_or_default).collect())
}

/// `metadata` with `main` removed: the table reads as empty (how a remote catalog "drops" a
/// table a rolled-back run created; its history stays).
fn emptied(metadata: &TableMetadata, base_location: &str) -> Result<TableMetadata> {
    Ok(metadata
        .clone()
        .into_builder(Some(base_location.to_string()))
        .remove_ref(MAIN_BRANCH)
        .build()?
        .metadata)
}
