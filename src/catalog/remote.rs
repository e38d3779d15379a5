//! What the publishers of remote catalogs (S3 Tables, REST) need from a catalog: read a
//! table's current version, move one table pointer by compare-and-set, and (REST servers that
//! offer it) move several tables in one commit.

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::{self, StreamExt, TryStreamExt};
use iceberg::io::FileIO;
use iceberg::spec::TableMetadata;
use iceberg::Catalog;

use super::metadata_files::MetadataFiles;
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

/// Tables a command loads or looks at at once: on a remote catalog each costs round trips
/// (the table, its metadata file), and they are independent.
pub const TABLES_AT_ONCE: usize = 8;

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

    /// Where `table` stands now: its metadata location, or `None` when it does not exist.
    /// One round trip; the metadata file is not read.
    async fn location(&self, table: &TableName) -> Result<Option<String>>;
}

/// One table's move in a multi-table commit: from `base` (its current metadata) to `new`.
#[derive(Clone, Copy)]
pub struct TableMove<'a> {
    pub table: &'a TableName,
    pub base: &'a TableMetadata,
    pub new: &'a TableMetadata,
}

/// What a multi-table commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committed {
    /// Every table moved.
    All,
    /// Nothing moved: some table was not at its base any more (the catalog's message).
    Conflict(String),
}

/// Several table pointers moved at once, or none (REST `POST /v1/{prefix}/transactions/commit`).
#[async_trait]
pub trait MultiTableCommit: Send + Sync {
    /// Checks that `moves` can be sent (each table's change from its base to its new metadata
    /// can be expressed), without sending anything.
    fn check(&self, moves: &[TableMove<'_>]) -> Result<()>;

    /// Moves every table of `moves` from its base to its new metadata in one catalog commit.
    /// Any other failure is an error saying whether a table may have moved.
    async fn commit_all(&self, moves: &[TableMove<'_>]) -> Result<Committed>;
}

/// A connected remote catalog.
pub struct RemoteCatalog {
    /// `s3tables` or `rest`.
    pub kind: &'static str,
    /// The table bucket ARN, or the REST URI with its warehouse: what messages and the lock
    /// name use. Never a secret (a URI with userinfo is refused by the spec).
    pub identity: String,
    pub catalog: Arc<dyn Catalog>,
    pub pointers: Arc<dyn TablePointers>,
    /// The server's multi-table commit, when it offers one and the spec does not turn it off.
    pub transactions: Option<Arc<dyn MultiTableCommit>>,
    pub file_io: FileIO,
    /// The metadata files this command read, by location (see `metadata_files.rs`).
    pub metadata_files: MetadataFiles,
}

impl RemoteCatalog {
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Whether this catalog moves a table to a metadata file the engine wrote (S3 Tables).
    /// A REST server takes the changes and writes its own file, so the engine writes none
    /// there: a file no table would ever name is never written.
    pub fn takes_metadata_files(&self) -> bool {
        self.kind != "rest"
    }

    /// A file name for run locks of this catalog: one per identity.
    pub fn lock_name(&self) -> String {
        super::lock_anchor::remote_lock_name(self.kind, &self.identity)
    }

    /// `table` as the catalog has it now, or `None` when it does not exist: one load (on S3
    /// Tables, see [`RemoteCatalog::pointed`]).
    pub async fn table(&self, table: &TableName) -> Result<Option<iceberg::table::Table>> {
        if self.takes_metadata_files() {
            let Some((location, metadata)) = self.pointed(table).await? else {
                return Ok(None);
            };
            let metadata = metadata.map_err(|e| Error::table(table, "cannot load table", e))?;
            return self.table_at(table, location, metadata).map(Some);
        }
        match self.catalog.load_table(&table.ident()).await {
            Ok(loaded) => Ok(Some(loaded)),
            Err(e) if super::absent::absent(&e) => Ok(None),
            Err(e) => Err(Error::table(table, "cannot load table", e)),
        }
    }

    /// Where a catalog that takes the engine's metadata files (S3 Tables) points `table`, and
    /// that file's metadata, or the failure to read it (`None`: the table does not exist). One
    /// catalog call; a version this command already read is not read again.
    pub async fn pointed(
        &self,
        table: &TableName,
    ) -> Result<Option<(String, iceberg::Result<Arc<TableMetadata>>)>> {
        let Some(location) = self.pointers.location(table).await? else {
            return Ok(None);
        };
        let metadata = self.metadata_files.read(&self.file_io, &location).await;
        Ok(Some((location, metadata)))
    }

    /// `table` at the version whose metadata file is `location`, reading its files through
    /// this catalog's file access.
    pub fn table_at(
        &self,
        table: &TableName,
        location: String,
        metadata: Arc<TableMetadata>,
    ) -> Result<iceberg::table::Table> {
        Ok(iceberg::table::Table::builder()
            .metadata(metadata)
            .metadata_location(location)
            .identifier(table.ident())
            .file_io(self.file_io.clone())
            .runtime(iceberg::Runtime::try_current()?)
            .build()?)
    }

    /// The current version of `table`, or `None` when it does not exist.
    pub async fn current(&self, table: &TableName) -> Result<Option<Current>> {
        let Some(loaded) = self.table(table).await? else {
            return Ok(None);
        };
        Ok(Some(Current {
            location: loaded.metadata_location_result()?.to_string(),
            metadata: loaded.metadata().clone(),
        }))
    }

    /// The current metadata location of each of `tables`, in order (`None`: it does not
    /// exist), [`TABLES_AT_ONCE`] looked at a time; no metadata file is read.
    pub async fn current_locations(&self, tables: &[&TableName]) -> Result<Vec<Option<String>>> {
        // By index: a closure over `&&TableName` would not be `Send` for every lifetime.
        stream::iter(0..tables.len())
            .map(|i| self.pointers.location(tables[i]))
            .buffered(TABLES_AT_ONCE)
            .try_collect()
            .await
    }

    /// Reads the metadata file at `location` (once per command: a metadata file never
    /// changes).
    pub async fn read_metadata(&self, location: &str) -> Result<TableMetadata> {
        Ok((*self.metadata_files.read(&self.file_io, location).await?).clone())
    }
}
