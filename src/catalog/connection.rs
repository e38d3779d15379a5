//! What a connected catalog is made of: the `iceberg::Catalog` of its kind, its name, where it
//! keeps its tables ([`Backend`]) and its file access. The kinds build it (`sql.rs`,
//! `s3tables.rs`, `rest.rs`); `open.rs` connects the one a spec names and reads through it.

use std::path::PathBuf;
use std::sync::Arc;

use iceberg::io::FileIO;
use iceberg::Catalog;

use super::remote::RemoteCatalog;

/// Where a catalog keeps its tables and how it is reached.
pub enum Backend {
    /// The embedded catalog: a SQLite file and a local warehouse folder.
    Sql {
        database: PathBuf,
        warehouse: PathBuf,
    },
    /// A remote catalog: tables move one by one, each by compare-and-set (see
    /// `commit::publish`); or, on REST servers that offer it, all at once.
    Remote(Arc<RemoteCatalog>),
}

/// A connected catalog.
pub struct PipelineCatalog {
    pub(super) inner: Arc<dyn Catalog>,
    /// The catalog's name (for the embedded one: as stored in the SQLite file).
    pub(super) name: String,
    pub(super) backend: Backend,
    pub(super) file_io: FileIO,
    /// The environment every table is loaded in (see `env.rs`); `None`: `main`.
    pub(super) env: Option<String>,
}
