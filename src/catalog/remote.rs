//! What the publishers of remote catalogs (S3 Tables, REST) need from a catalog: read a
//! table's current version, and move one table pointer by compare-and-set.

use std::sync::Arc;

use async_trait::async_trait;
use iceberg::io::FileIO;
use iceberg::spec::{TableMetadata, MAIN_BRANCH};
use iceberg::Catalog;

use super::publish::TableChange;
use crate::error::{Error, Result};
use crate::spec::TableName;

/// The result of moving one table pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swap {
    /// The table moved; its new metadata location.
    Moved(String),
    /// The table was already at the new version (another process completed this move).
    AlreadyThere,
    /// The table is at neither version: another writer moved it.
    Conflict,
}

/// One table's current version in a remote catalog.
pub struct Current {
    pub location: String,
    pub metadata: TableMetadata,
}

/// Per-table compare-and-set on a remote catalog.
#[async_trait]
pub trait TablePointers: Send + Sync {
    /// Moves `table` from the version at `base_location` (whose metadata is `base`) to `new`,
    /// whose metadata file is already written at `new_file`. The move happens only if the table
    /// is still at `base_location`.
    async fn swap(
        &self,
        table: &TableName,
        base_location: &str,
        base: &TableMetadata,
        new_file: &str,
        new: &TableMetadata,
    ) -> Result<Swap>;
}

/// A connected remote catalog.
pub struct RemoteCatalog {
    /// `s3tables` or `rest`.
    pub kind: &'static str,
    /// The table bucket ARN or the REST URI: what messages and the lock name use.
    pub identity: String,
    pub catalog: Arc<dyn Catalog>,
    pub pointers: Arc<dyn TablePointers>,
    pub file_io: FileIO,
}

impl RemoteCatalog {
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// A file name for run locks of this catalog.
    pub fn lock_name(&self) -> String {
        let safe: String = self
            .identity
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("{}-{safe}", self.kind)
    }

    /// The current version of `table`, or `None` when it does not exist.
    pub async fn current(&self, table: &TableName) -> Result<Option<Current>> {
        let ident = table.ident();
        if !self.catalog.table_exists(&ident).await? {
            return Ok(None);
        }
        let loaded = self
            .catalog
            .load_table(&ident)
            .await
            .map_err(|e| Error::table(table, "cannot load table", e))?;
        Ok(Some(Current {
            location: loaded.metadata_location_result()?.to_string(),
            metadata: loaded.metadata().clone(),
        }))
    }

    /// Reads the metadata file at `location`.
    pub async fn read_metadata(&self, location: &str) -> Result<TableMetadata> {
        Ok(TableMetadata::read_from(&self.file_io, location).await?)
    }

    /// A change's base (its metadata location and metadata) and the metadata it moves the
    /// table to. A change without metadata (the embedded catalog's drop) empties the table.
    pub async fn versions_of(
        &self,
        change: &TableChange,
    ) -> Result<(String, TableMetadata, TableMetadata)> {
        let Some(base_location) = &change.expected_location else {
            return Err(Error::table_msg(
                &change.table,
                "internal: a remote catalog's table must exist before its first publish",
            ));
        };
        let base = self.read_metadata(base_location).await?;
        let new = match &change.metadata {
            Some(m) => m.clone(),
            None => emptied(&base, base_location)?,
        };
        Ok((base_location.clone(), base, new))
    }

    /// The current metadata location of each changed table, in order.
    pub async fn locations(&self, changes: &[TableChange]) -> Result<Vec<String>> {
        let mut locations = Vec::with_capacity(changes.len());
        for change in changes {
            let now = self.current(&change.table).await?;
            locations.push(now.map(|c| c.location).unwrap_or_default());
        }
        Ok(locations)
    }
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
