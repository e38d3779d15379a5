//! Opening a catalog: [`PipelineCatalog`] connects to the catalog of a spec (the embedded SQL
//! catalog, an S3 Tables table bucket or a REST catalog) and reads and creates its tables.
//! Publishing lives in `commit::publish`, which moves the pointers this type reads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use iceberg::io::FileIO;
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation};

use super::connection::{Backend, PipelineCatalog};
use super::lock_anchor::LockAnchor;
use super::remote::{RemoteCatalog, TABLES_AT_ONCE};
use super::{rest, s3tables, sql};
use crate::error::{Error, Result};
use crate::spec::{list_pipelines, load_pipeline, load_with_catalog, CatalogConfig, TableName};

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

    /// A connection to the embedded catalog database that waits up to 30 s for other writers.
    pub(crate) async fn connect_sqlite(&self) -> Result<Option<sqlx::SqliteConnection>> {
        match &self.backend {
            Backend::Sql { database, .. } => Ok(Some(sql::sqlite_connection(database).await?)),
            Backend::Remote(_) => Ok(None),
        }
    }

    /// Where this catalog keeps its tables and how it is reached.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The SQLite file of the embedded catalog; `None` for remote catalogs.
    pub fn sqlite_database(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Sql { database, .. } => Some(database),
            Backend::Remote(_) => None,
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

    /// For the embedded catalog, whether a table `location` lies outside its warehouse folder
    /// (a copied or moved project whose catalog still points at the original's files): the
    /// warehouse folder when it does. Always `None` for remote catalogs.
    pub fn outside_warehouse(&self, location: &str) -> Option<PathBuf> {
        let warehouse = self.local_warehouse()?;
        let root = std::fs::canonicalize(warehouse).unwrap_or_else(|_| warehouse.to_path_buf());
        let location = location
            .strip_prefix("file://")
            .or_else(|| location.strip_prefix("file:"))
            .unwrap_or(location);
        (!super::lies_inside(&root, Path::new(location))).then_some(root)
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

    /// Where run locks are kept: next to the SQLite file for the embedded catalog, under the
    /// system temp folder (one name per remote catalog: bucket, or URI and warehouse)
    /// otherwise. Locks serialize runs on one machine; across machines, compare-and-set on
    /// every table keeps runs apart.
    pub fn lock_anchor(&self) -> Result<LockAnchor> {
        match &self.backend {
            Backend::Sql { database, .. } => Ok(LockAnchor {
                path: database.clone(),
                catalog: format!("embedded catalog {}", database.display()),
            }),
            Backend::Remote(r) => {
                let dir = std::env::temp_dir().join("pipeline-locks");
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                Ok(LockAnchor {
                    path: dir.join(r.lock_name()),
                    catalog: format!("{} catalog {}", r.kind(), r.identity),
                })
            }
        }
    }

    /// Whether `config` names this very catalog (the same SQLite file, bucket, or REST URI and
    /// warehouse): which of a project's pipelines write here.
    pub fn is(&self, config: &CatalogConfig) -> bool {
        match (&self.backend, config) {
            (Backend::Sql { database, .. }, CatalogConfig::Sql { database: d, .. }) => {
                database == d
            }
            (Backend::Remote(r), CatalogConfig::S3Tables(c)) => {
                r.kind == "s3tables" && r.identity == c.table_bucket_arn
            }
            (Backend::Remote(r), CatalogConfig::Rest(c)) => {
                r.kind == "rest" && r.identity == c.identity()
            }
            _ => false,
        }
    }

    /// The remote catalog (S3 Tables, REST) behind this one; `None` for the embedded catalog.
    pub fn remote(&self) -> Option<&Arc<RemoteCatalog>> {
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
    /// One round trip on a remote catalog: the load itself says whether the table exists.
    pub async fn load(&self, table: &TableName) -> Result<Option<Table>> {
        let ident = table.ident();
        let Some(loaded) = self.load_current(table).await? else {
            return Ok(None);
        };
        let Some(env) = &self.env else {
            return Ok(Some(loaded));
        };
        let metadata = super::env::view(loaded.metadata(), env)?;
        let mut builder = Table::builder()
            .metadata(std::sync::Arc::new(metadata))
            .identifier(ident)
            .file_io(loaded.file_io().clone())
            .runtime(iceberg::Runtime::try_current()?);
        if let Some(location) = loaded.metadata_location() {
            builder = builder.metadata_location(location);
        }
        Ok(Some(builder.build()?))
    }

    /// `table` as the catalog has it now (`None`: it does not exist). Where the catalog
    /// points tables at metadata files the engine wrote (S3 Tables), the pointer is asked for
    /// and a version this command already read is not read again.
    async fn load_current(&self, table: &TableName) -> Result<Option<Table>> {
        let remote = self.remote().filter(|r| r.takes_metadata_files());
        let Some(remote) = remote else {
            return match self.inner.load_table(&table.ident()).await {
                Ok(t) => Ok(Some(t)),
                Err(e) if super::absent::absent(&e) => Ok(None),
                Err(e) => Err(self.unreadable(table, e).await),
            };
        };
        match remote.pointed(table).await? {
            None => Ok(None),
            Some((location, Ok(metadata))) => remote.table_at(table, location, metadata).map(Some),
            Some((_, Err(e))) => Err(self.unreadable(table, e).await),
        }
    }

    /// This catalog with every table loaded in environment `env` (its Iceberg branch `env`;
    /// see `env.rs`), or on `main` (`None`), on every catalog kind.
    pub fn in_env(mut self, env: Option<String>) -> Result<PipelineCatalog> {
        if let Some(name) = &env {
            if !super::env::valid_env_name(name) {
                return Err(Error::Usage(format!(
                    "--env `{name}` is not an environment name: letters, digits, `_` and `-`, not `main`"
                )));
            }
        }
        self.env = env;
        Ok(self)
    }

    /// The environment tables are loaded in; `None`: `main`.
    pub fn env(&self) -> Option<&str> {
        self.env.as_deref()
    }

    /// The metadata file the embedded catalog records for `table` (read from the catalog
    /// database, without reading the file); `None` for remote catalogs and unknown tables.
    pub async fn recorded_metadata_location(&self, table: &TableName) -> Result<Option<String>> {
        Ok(self
            .recorded_locations(table)
            .await?
            .map(|(current, _)| current))
    }

    /// The current and previous metadata files the embedded catalog's database records for
    /// `table`; `None` for remote catalogs and unknown tables.
    async fn recorded_locations(
        &self,
        table: &TableName,
    ) -> Result<Option<(String, Option<String>)>> {
        let Backend::Sql { database, .. } = &self.backend else {
            return Ok(None);
        };
        let mut conn = sql::sqlite_connection(database).await?;
        let row = sqlx::query_as(
            "SELECT metadata_location, previous_metadata_location FROM iceberg_tables \
             WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
        )
        .bind(&self.name)
        .bind(&table.namespace)
        .bind(&table.name)
        .fetch_optional(&mut conn)
        .await?;
        Ok(row)
    }

    /// The error for a table the catalog lists but whose metadata cannot be read: for the
    /// embedded catalog it names the metadata file and the version before it.
    async fn unreadable(&self, table: &TableName, e: iceberg::Error) -> Error {
        let cause = Error::from(e);
        match self.recorded_locations(table).await {
            Ok(Some((current, previous))) => Error::Damaged(format!(
                "table {table}: its metadata file {current} cannot be read ({cause}){}",
                previous
                    .map(|p| format!("; the version before it is {p}"))
                    .unwrap_or_default()
            )),
            _ => Error::table(table, "cannot load table", cause),
        }
    }

    /// Loads each of `tables`, in order (`None`: it does not exist), [`TABLES_AT_ONCE`] at a
    /// time.
    pub async fn load_many(&self, tables: &[&TableName]) -> Result<Vec<Option<Table>>> {
        // By index: a closure over `&&TableName` would not be `Send` for every lifetime.
        stream::iter(0..tables.len())
            .map(|i| self.load(tables[i]))
            .buffered(TABLES_AT_ONCE)
            .try_collect()
            .await
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
}

/// The catalog a command without a pipeline argument works on: that of `--pipeline`, else of
/// the project's only pipeline, else the embedded default; `catalog` (`--catalog NAME`) picks
/// one of that spec's `[catalogs.NAME]` (with several pipelines, every spec that defines it
/// must agree).
pub async fn open_project_catalog(
    project: &Path,
    pipeline: Option<&str>,
    catalog: Option<&str>,
) -> Result<PipelineCatalog> {
    let only = list_pipelines(project);
    if only.is_empty() && pipeline.is_none() && !project.join("pipelines").is_dir() {
        return Err(Error::Usage(format!(
            "{} is not a pipeline project: it has no pipelines/ folder (a pipeline is pipelines/NAME.toml); run from the project's folder, or give --project DIR",
            project.display()
        )));
    }
    let name = pipeline.or(match only.as_slice() {
        [only] => Some(only.as_str()),
        _ => None,
    });
    let config = match (name, catalog) {
        (Some(name), _) => load_with_catalog(project, name, catalog)?.catalog,
        // Several pipelines: `--catalog NAME` is fine if every spec that defines it agrees.
        (None, Some(wanted)) => {
            let mut found: Vec<CatalogConfig> = Vec::new();
            for name in &only {
                if let Some(c) = load_pipeline(project, name)?.catalogs.get(wanted) {
                    if !found.contains(c) {
                        found.push(c.clone());
                    }
                }
            }
            match found.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(Error::Usage(format!(
                        "no pipeline of this project defines [catalogs.{wanted}]"
                    )))
                }
                _ => {
                    return Err(Error::Usage(format!(
                        "pipelines define [catalogs.{wanted}] differently; add --pipeline NAME to say which"
                    )))
                }
            }
        }
        (None, None) => CatalogConfig::embedded_default(project),
    };
    PipelineCatalog::connect(&config).await
}
