//! The embedded catalog's publisher: new metadata files are written first, then every table
//! pointer of the run moves in ONE SQLite transaction, each by compare-and-set on the metadata
//! location the run started from, together with the run record. Readers see all of a run's
//! tables move, or none.

use std::path::PathBuf;
use std::str::FromStr;

use async_trait::async_trait;
use iceberg::io::FileIO;
use iceberg::MetadataLocation;
use sqlx::{Connection, SqliteConnection};

use super::publication::{Publication, PublishOutcome, Publisher, TableChange};
use crate::catalog::sqlite_connection;
use crate::error::{Error, Result};
use crate::fault::pause_point;
use crate::records::insert_run_record;

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
        let planned = self.write_metadata_files(publication).await?;

        // 2. Move every pointer in one transaction.
        let mut conn = sqlite_connection(&self.database).await?;
        let mut tx = conn.begin().await?;
        let mut conflicts = Vec::new();
        for (index, (change, new_location)) in publication.changes.iter().zip(&planned).enumerate()
        {
            let moved = self.move_pointer(&mut tx, change, new_location).await?;
            if moved != 1 {
                conflicts.push(index);
                continue;
            }
            pause_point("publishing");
        }
        if !conflicts.is_empty() {
            tx.rollback().await?;
            return Ok(PublishOutcome::Conflicts(conflicts));
        }
        if let Some(record) = &publication.record {
            insert_run_record(&mut tx, &self.name, record).await?;
        }
        tx.commit().await?;
        Ok(PublishOutcome::Published(planned))
    }
}

impl SqlitePublisher {
    /// Writes the new metadata file of every change (the version after the one it was staged
    /// on); returns their locations, in order (empty for a table dropped).
    async fn write_metadata_files(&self, publication: &Publication) -> Result<Vec<String>> {
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
        Ok(planned)
    }

    /// Moves the pointer of one table in `conn`'s transaction, by compare-and-set on its
    /// expected location: deleted (the table is dropped), updated to `new_location`, or
    /// inserted (the table is new). Returns the rows changed: 1 unless another writer came
    /// first.
    async fn move_pointer(
        &self,
        conn: &mut SqliteConnection,
        change: &TableChange,
        new_location: &str,
    ) -> Result<u64> {
        let ns = &change.table.namespace;
        let name = &change.table.name;
        Ok(match (&change.expected_location, &change.metadata) {
            (Some(expected), None) => sqlx::query(
                "DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? \
                 AND table_name = ? AND metadata_location = ?",
            )
            .bind(&self.name)
            .bind(ns)
            .bind(name)
            .bind(expected)
            .execute(&mut *conn)
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
            .execute(&mut *conn)
            .await?
            .rows_affected(),
            // Neither a table to move nor metadata to create one from: refused before anything
            // is written, rather than registering a table with no metadata location.
            (None, None) => {
                return Err(Error::Internal(format!(
                    "{}: a change that neither moves an existing table nor creates one",
                    change.table
                )))
            }
            (None, Some(_)) => sqlx::query(
                "INSERT OR IGNORE INTO iceberg_tables \
                 (catalog_name, table_namespace, table_name, metadata_location, iceberg_type) \
                 VALUES (?, ?, ?, ?, 'TABLE')",
            )
            .bind(&self.name)
            .bind(ns)
            .bind(name)
            .bind(new_location)
            .execute(&mut *conn)
            .await?
            .rows_affected(),
        })
    }
}

#[cfg(test)]
mod tests {
    use sqlx::Connection;

    use super::*;
    use crate::commit::fixture::Warehouse;
    use crate::spec::TableName;

    #[tokio::test]
    async fn a_change_with_neither_a_table_nor_metadata_registers_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("catalog.db");
        std::fs::File::create(&database).unwrap();
        let mut conn = sqlite_connection(&database).await.unwrap();
        sqlx::query(
            "CREATE TABLE iceberg_tables (catalog_name TEXT, table_namespace TEXT, table_name TEXT, \
             metadata_location TEXT, previous_metadata_location TEXT, iceberg_type TEXT)",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        let publisher = SqlitePublisher {
            name: "embedded".into(),
            database: database.clone(),
            file_io: Warehouse::new().file_io,
        };
        let publication = Publication {
            changes: vec![TableChange {
                table: TableName::parse("silver.orders").unwrap(),
                expected_location: None,
                metadata: None,
            }],
            record: None,
        };
        let error = publisher.try_publish(&publication).await.err().unwrap();
        assert!(error.to_string().contains("neither moves"), "{error}");
        let (rows,): (i64,) = sqlx::query_as("SELECT count(*) FROM iceberg_tables")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(rows, 0);
        conn.close().await.unwrap();
    }
}
