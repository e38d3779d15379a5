//! The Iceberg catalog behind a pipeline: the embedded SQL catalog (SQLite file + local
//! warehouse folder, a real `iceberg-catalog-sql` catalog that PyIceberg's `SqlCatalog` reads),
//! an AWS S3 Tables table bucket, or any Iceberg REST catalog.
//!
//! Everything the engine does goes through [`PipelineCatalog`]: reads through the
//! `iceberg::Catalog` of the kind, publishing through that kind's [`Publisher`], run records
//! in the catalog database (embedded) or in the control table `pipeline_meta.runs` (remote).

mod journal;
mod publish;
mod remote;
mod rest;
mod runs;
mod s3tables;
mod sql;
mod storage;
mod updates;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iceberg::io::FileIO;
use iceberg::table::Table;
use iceberg::{Catalog, NamespaceIdent, TableCreation};

pub use journal::{Recovery, CONTROL_NAMESPACE, CONTROL_TABLE};
pub use publish::{Publication, PublishOutcome, Publisher, SqlitePublisher, TableChange};
pub use runs::{RunRecord, TableRecord};

use crate::error::{Error, Result};
use crate::spec::{CatalogConfig, TableName};

/// Where a catalog keeps its tables and how it is reached.
pub(crate) enum Backend {
    /// The embedded catalog: a SQLite file and a local warehouse folder.
    Sql {
        database: PathBuf,
        warehouse: PathBuf,
    },
    /// A remote catalog: tables move one by one, each by compare-and-set, after a durable
    /// publish record (see [`journal`]); or, on REST servers that offer it, all at once.
    Remote(Arc<remote::RemoteCatalog>),
}

/// A connected catalog.
pub struct PipelineCatalog {
    inner: Arc<dyn Catalog>,
    /// The catalog's name (for the embedded one: as stored in the SQLite file).
    name: String,
    backend: Backend,
    file_io: FileIO,
    publisher: Arc<dyn Publisher>,
}

impl PipelineCatalog {
    /// Connects to (and for the embedded catalog, if needed creates) the catalog of `config`.
    /// Credentials are read here, from the AWS chain or the variables the spec names.
    pub async fn connect(config: &CatalogConfig) -> Result<PipelineCatalog> {
        match config {
            CatalogConfig::Sql {
                name,
                database,
                warehouse,
            } => sql::connect(name, database, warehouse).await,
            CatalogConfig::S3Tables(c) => s3tables::connect(c).await,
            CatalogConfig::Rest(c) => rest::connect(c).await,
        }
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

    /// A connection to the embedded catalog database that waits up to 30 s for other writers.
    pub(super) async fn connect_sqlite(&self) -> Result<Option<sqlx::SqliteConnection>> {
        match &self.backend {
            Backend::Sql { database, .. } => Ok(Some(publish::sqlite_connection(database).await?)),
            Backend::Remote(_) => Ok(None),
        }
    }

    /// File access for the warehouse.
    pub fn file_io(&self) -> &FileIO {
        &self.file_io
    }

    /// The local warehouse folder of the embedded catalog; `None` for remote catalogs.
    pub fn local_warehouse(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Sql { warehouse, .. } => Some(warehouse),
            Backend::Remote(_) => None,
        }
    }

    /// The catalog's name (PyIceberg must be given the same name to see the embedded tables).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `sql`, `s3tables` or `rest`.
    pub fn kind(&self) -> &'static str {
        match &self.backend {
            Backend::Sql { .. } => "sql",
            Backend::Remote(r) => r.kind(),
        }
    }

    /// The file next to which run locks are kept: the SQLite file for the embedded catalog, a
    /// file under the system temp folder (one per remote catalog) otherwise. Locks serialize
    /// runs on one machine; across machines, compare-and-set on every table keeps runs apart.
    pub fn lock_anchor(&self) -> Result<PathBuf> {
        match &self.backend {
            Backend::Sql { database, .. } => Ok(database.clone()),
            Backend::Remote(r) => {
                let dir = std::env::temp_dir().join("pipeline-locks");
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                Ok(dir.join(r.lock_name()))
            }
        }
    }

    pub(crate) fn remote(&self) -> Option<&Arc<remote::RemoteCatalog>> {
        match &self.backend {
            Backend::Remote(r) => Some(r),
            Backend::Sql { .. } => None,
        }
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

    /// Creates `table` empty (no snapshot) in a remote catalog, which chooses its location;
    /// the run's publish then moves it from that empty version. (The embedded catalog instead
    /// creates a table when the run publishes.) If another writer created it meanwhile, theirs
    /// is returned.
    pub async fn create_empty_table(
        &self,
        table: &TableName,
        creation: TableCreation,
    ) -> Result<Table> {
        let ns = NamespaceIdent::new(table.namespace.clone());
        match self.inner.create_table(&ns, creation).await {
            Ok(created) => Ok(created),
            Err(e) => match self.load(table).await? {
                Some(existing) => Ok(existing),
                None => Err(Error::table(table, "cannot create table", e)),
            },
        }
    }

    /// The location a new table gets in the embedded catalog's warehouse folder.
    pub fn local_table_location(&self, table: &TableName) -> Option<String> {
        self.local_warehouse().map(|w| {
            w.join(&table.namespace)
                .join(&table.name)
                .display()
                .to_string()
        })
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

    /// Every table in every namespace, sorted (the remote catalogs' control table
    /// `pipeline_meta.runs` included).
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

    /// Completes (or, when a table moved meanwhile in a conflicting way, undoes) a publish that
    /// a killed or failed command left half done. Only remote catalogs without multi-table
    /// commits can be left so; for the others this does nothing. Every command that changes
    /// tables calls it first.
    pub async fn recover(&self) -> Result<Option<Recovery>> {
        match &self.backend {
            Backend::Sql { .. } => Ok(None),
            Backend::Remote(r) => journal::recover(r).await,
        }
    }
}
