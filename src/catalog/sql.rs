//! The embedded catalog: an Iceberg SQL catalog in a SQLite file plus a local warehouse folder.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use iceberg::io::FileIOBuilder;
use iceberg::CatalogBuilder;
use iceberg_catalog_sql::{SqlCatalogBuilder, SQL_CATALOG_PROP_URI, SQL_CATALOG_PROP_WAREHOUSE};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::ConnectOptions;

use super::connection::{Backend, PipelineCatalog};
use super::local_fs::LocalStorageFactory;
use crate::error::{Error, Result};

/// Opens (creating if needed) the SQLite catalog `name` at `database` with `warehouse`.
pub(super) async fn connect(
    name: &str,
    database: &Path,
    warehouse: &Path,
) -> Result<PipelineCatalog> {
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
    let factory = Arc::new(LocalStorageFactory);
    let inner = SqlCatalogBuilder::default()
        .with_storage_factory(factory.clone())
        .load(name.to_string(), props)
        .await
        .map_err(|e| {
            damaged_database(&database, &e.to_string()).unwrap_or_else(|| Error::Table {
                table: "(catalog)".into(),
                message: format!("cannot open the embedded catalog {}", database.display()),
                source: Some(Box::new(e)),
            })
        })?;
    let file_io = FileIOBuilder::new(factory).build();
    Ok(PipelineCatalog {
        inner: Arc::new(inner),
        name: name.to_string(),
        backend: Backend::Sql {
            database,
            warehouse,
        },
        file_io,
        env: None,
    })
}

/// A connection to the catalog database that waits up to 30 s for other writers.
pub(crate) async fn sqlite_connection(database: &Path) -> Result<sqlx::SqliteConnection> {
    let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", database.display()))?
        .busy_timeout(std::time::Duration::from_secs(30));
    options
        .connect()
        .await
        .map_err(|e| damaged_database(database, &e.to_string()).unwrap_or(Error::Sqlx(e)))
}

/// The error for a catalog database SQLite cannot read as one (not a database, or its pages
/// damaged: SQLite codes 26 and 11), as damage: the tables' files are not touched by it.
fn damaged_database(database: &Path, error: &str) -> Option<Error> {
    let damaged = error.contains("(code: 26)")
        || error.contains("(code: 11)")
        || error.contains("file is not a database")
        || error.contains("database disk image is malformed");
    damaged.then(|| {
        Error::Damaged(format!(
            "the catalog database {} is damaged ({}); restore it from a backup: the tables' files are intact, and each table's newest metadata file (warehouse/NAMESPACE/TABLE/metadata/*.metadata.json) says where it was",
            database.display(),
            error.rsplit(": ").next().unwrap_or(error)
        ))
    })
}
