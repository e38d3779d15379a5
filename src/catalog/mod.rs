//! The Iceberg catalog behind a pipeline. Today: the embedded SQL catalog (SQLite file + local
//! warehouse folder), a real `iceberg-catalog-sql` catalog that PyIceberg's `SqlCatalog` reads.

mod publish;
mod runs;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use iceberg::io::{FileIO, FileIOBuilder};
use iceberg::table::Table;
use iceberg::{Catalog, CatalogBuilder, NamespaceIdent};
use iceberg_catalog_sql::{
    SqlCatalog, SqlCatalogBuilder, SQL_CATALOG_PROP_URI, SQL_CATALOG_PROP_WAREHOUSE,
};
use iceberg_storage_opendal::OpenDalStorageFactory;

pub use publish::{Publication, PublishOutcome, Publisher, SqlitePublisher, TableChange};
pub use runs::{RunRecord, TableRecord};

use crate::error::{Error, Result};
use crate::spec::{CatalogConfig, TableName};

/// A connected catalog.
pub struct PipelineCatalog {
    inner: SqlCatalog,
    /// Catalog name as stored in the SQLite file.
    name: String,
    database: PathBuf,
    warehouse: PathBuf,
    file_io: FileIO,
    publisher: Arc<dyn Publisher>,
}

impl PipelineCatalog {
    /// Connects to (and if needed creates) the catalog described by `config`.
    pub async fn connect(config: &CatalogConfig) -> Result<PipelineCatalog> {
        let CatalogConfig::Sql {
            name,
            database,
            warehouse,
        } = config;
        std::fs::create_dir_all(warehouse).map_err(|e| Error::io(warehouse, e))?;
        if let Some(parent) = database.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        let warehouse = std::path::absolute(warehouse).map_err(|e| Error::io(warehouse, e))?;
        let database = std::path::absolute(database).map_err(|e| Error::io(database, e))?;
        let props = HashMap::from([
            (
                SQL_CATALOG_PROP_URI.to_string(),
                format!("sqlite://{}?mode=rwc", database.display()),
            ),
            (
                SQL_CATALOG_PROP_WAREHOUSE.to_string(),
                warehouse.display().to_string(),
            ),
        ]);
        let factory = Arc::new(OpenDalStorageFactory::Fs);
        let inner = SqlCatalogBuilder::default()
            .with_storage_factory(factory.clone())
            .load(name.clone(), props)
            .await
            .map_err(|e| Error::Table {
                table: "(catalog)".into(),
                message: format!("cannot open the embedded catalog {}", database.display()),
                source: Some(Box::new(e)),
            })?;
        let file_io = FileIOBuilder::new(factory).build();
        let publisher = Arc::new(SqlitePublisher {
            name: name.clone(),
            database: database.clone(),
            file_io: file_io.clone(),
        });
        Ok(PipelineCatalog {
            inner,
            name: name.clone(),
            database,
            warehouse,
            file_io,
            publisher,
        })
    }

    /// How this catalog publishes a run (see [`Publisher`]).
    pub fn publisher(&self) -> &dyn Publisher {
        self.publisher.as_ref()
    }

    /// Publishes every change at once, or none (see [`Publisher::publish`]).
    pub async fn publish(&self, publication: Publication) -> Result<Vec<String>> {
        self.publisher.publish(publication).await
    }

    /// Publishes every change at once, or none, reporting conflicts (see [`Publisher`]).
    pub async fn try_publish(&self, publication: &Publication) -> Result<PublishOutcome> {
        self.publisher.try_publish(publication).await
    }

    /// A connection to the catalog database that waits up to 30 s for other writers.
    pub(super) async fn connect_sqlite(&self) -> Result<sqlx::SqliteConnection> {
        publish::sqlite_connection(&self.database).await
    }

    /// File access for the warehouse.
    pub fn file_io(&self) -> &FileIO {
        &self.file_io
    }

    /// The warehouse folder where new tables are placed.
    pub fn warehouse(&self) -> &std::path::Path {
        &self.warehouse
    }

    /// The catalog's name (PyIceberg must be given the same name to see the tables).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The SQLite file.
    pub fn database(&self) -> &std::path::Path {
        &self.database
    }

    /// Creates the namespace if it does not exist yet.
    pub async fn ensure_namespace(&self, namespace: &str) -> Result<()> {
        let ns = NamespaceIdent::new(namespace.to_string());
        if !self.inner.namespace_exists(&ns).await? {
            match self.inner.create_namespace(&ns, HashMap::new()).await {
                Ok(_) => {}
                // Another process may have created it meanwhile.
                Err(_) if self.inner.namespace_exists(&ns).await? => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Loads a table, or `None` when it does not exist.
    pub async fn load(&self, table: &TableName) -> Result<Option<Table>> {
        let ident = table.ident();
        if !self.inner.table_exists(&ident).await? {
            return Ok(None);
        }
        self.inner
            .load_table(&ident)
            .await
            .map(Some)
            .map_err(|e| Error::table(table, "cannot load table", e))
    }

    /// Loads a table that must exist.
    pub async fn load_existing(&self, table: &TableName) -> Result<Table> {
        self.load(table).await?.ok_or_else(|| {
            Error::table_msg(
                table,
                "no such table; `pipeline tables` lists the tables in this catalog",
            )
        })
    }

    /// Every table in every namespace, sorted.
    pub async fn list_tables(&self) -> Result<Vec<TableName>> {
        let mut out = Vec::new();
        for ns in self.inner.list_namespaces(None).await? {
            for ident in self.inner.list_tables(&ns).await? {
                out.push(TableName {
                    namespace: ident.namespace().join("."),
                    name: ident.name().to_string(),
                });
            }
        }
        out.sort();
        Ok(out)
    }
}
