//! Publishing a run: one interface ([`Publisher`]), one implementation per catalog kind.
//!
//! The embedded catalog's ([`SqlitePublisher`]): new metadata files are written first, then
//! every table pointer of the run moves in ONE SQLite transaction, each by compare-and-set on
//! the metadata location the run started from, together with the run record. Readers see all
//! of a run's tables move, or none.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use async_trait::async_trait;
use iceberg::io::FileIO;

use iceberg::spec::TableMetadata;
use iceberg::MetadataLocation;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

use super::runs::{self, RunRecord};
use crate::error::{Error, Result};
use crate::spec::TableName;

/// One table's move in a publish.
pub struct TableChange {
    pub table: TableName,
    /// The metadata location the change was staged on; `None` creates the table.
    pub expected_location: Option<String>,
    /// The metadata to publish (its `main` branch already points at the new snapshot), or
    /// `None` to drop the table from the catalog (its files stay, for time travel by path).
    pub metadata: Option<TableMetadata>,
}

/// A set of table changes published together, with the record that describes them.
#[derive(Default)]
pub struct Publication {
    pub changes: Vec<TableChange>,
    /// Written in the same transaction as the pointer moves.
    pub record: Option<RunRecord>,
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

    /// Publishes every change at once. On any conflict nothing moves and the error names the
    /// table. Returns the new metadata location of each table, in order.
    async fn publish(&self, publication: Publication) -> Result<Vec<String>> {
        match self.try_publish(&publication).await? {
            PublishOutcome::Published(locations) => Ok(locations),
            PublishOutcome::Conflicts(indexes) => {
                let change = &publication.changes[indexes[0]];
                Err(Error::Conflict {
                    table: change.table.to_string(),
                    message: match change.expected_location {
                        Some(_) => "another writer committed to it after this command read it",
                        None => "another writer created it after this command started",
                    }
                    .into(),
                })
            }
        }
    }
}

/// The embedded catalog's publisher: one SQLite transaction for every pointer and the record.
pub struct SqlitePublisher {
    /// Catalog name as stored in the SQLite file.
    pub name: String,
    pub database: PathBuf,
    pub file_io: FileIO,
}

#[async_trait]
impl Publisher for SqlitePublisher {
    async fn try_publish(&self, publication: &Publication) -> Result<PublishOutcome> {
        // 1. Write every new metadata file. Until the pointers move, nobody reads them.
        let mut planned = Vec::with_capacity(publication.changes.len());
        for change in &publication.changes {
            let Some(metadata) = &change.metadata else {
                planned.push(String::new());
                continue;
            };
            let location = match &change.expected_location {
                Some(current) => MetadataLocation::from_str(current)?
                    .with_next_version()
                    .with_new_metadata(metadata),
                None => MetadataLocation::new_with_metadata(metadata.location(), metadata),
            };
            metadata
                .write_to(&self.file_io, &location)
                .await
                .map_err(|e| Error::table(&change.table, "cannot write table metadata", e))?;
            planned.push(location.to_string());
        }

        // 2. Move every pointer in one transaction.
        let mut conn = sqlite_connection(&self.database).await?;
        let mut tx = conn.begin().await?;
        let mut conflicts = Vec::new();
        for (index, (change, new_location)) in publication.changes.iter().zip(&planned).enumerate()
        {
            let ns = &change.table.namespace;
            let name = &change.table.name;
            let moved = match (&change.expected_location, &change.metadata) {
                (Some(expected), None) => sqlx::query(
                    "DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? \
                     AND table_name = ? AND metadata_location = ?",
                )
                .bind(&self.name)
                .bind(ns)
                .bind(name)
                .bind(expected)
                .execute(&mut *tx)
                .await?
                .rows_affected(),
                (Some(expected), Some(_)) => sqlx::query(
                    "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? \
                     WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? \
                     AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL) AND metadata_location = ?",
                )
                .bind(new_location)
                .bind(expected)
                .bind(&self.name)
                .bind(ns)
                .bind(name)
                .bind(expected)
                .execute(&mut *tx)
                .await?
                .rows_affected(),
                (None, _) => sqlx::query(
                    "INSERT OR IGNORE INTO iceberg_tables \
                     (catalog_name, table_namespace, table_name, metadata_location, iceberg_type) \
                     VALUES (?, ?, ?, ?, 'TABLE')",
                )
                .bind(&self.name)
                .bind(ns)
                .bind(name)
                .bind(new_location)
                .execute(&mut *tx)
                .await?
                .rows_affected(),
            };
            if moved != 1 {
                conflicts.push(index);
                continue;
            }
            crate::fault::pause_point("publishing");
        }
        if !conflicts.is_empty() {
            tx.rollback().await?;
            return Ok(PublishOutcome::Conflicts(conflicts));
        }
        if let Some(record) = &publication.record {
            runs::insert(&mut tx, &self.name, record).await?;
        }
        tx.commit().await?;
        Ok(PublishOutcome::Published(planned))
    }
}

/// A connection to the catalog database that waits up to 30 s for other writers.
pub(super) async fn sqlite_connection(database: &Path) -> Result<sqlx::SqliteConnection> {
    let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", database.display()))?
        .busy_timeout(std::time::Duration::from_secs(30));
    Ok(options.connect().await?)
}
