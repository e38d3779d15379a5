//! The Iceberg catalog behind a pipeline: the embedded SQL catalog (SQLite file + local
//! warehouse folder, a real `iceberg-catalog-sql` catalog that PyIceberg's `SqlCatalog` reads),
//! an AWS S3 Tables table bucket, or any Iceberg REST catalog.
//!
//! This layer opens catalogs and reads their tables ([`PipelineCatalog`]) and moves single table
//! pointers by compare-and-set (and, on REST servers that offer it, several at once). What the
//! engine records in a catalog (run records, the control table, the run locks) is `records`'s,
//! one layer up; how a run publishes with these pieces is `commit::publish`'s business.

mod absent;
mod connection;
mod data_credentials;
pub mod env;
mod fresh_credentials;
mod local_fs;
mod lock_anchor;
mod metadata_files;
mod node_storage;
mod open;
mod remote;
mod rest;
mod s3tables;
mod sql;
mod storage;
mod updates;

pub use connection::{Backend, PipelineCatalog};
pub use local_fs::{lies_inside, LocalStorageFactory};
pub use lock_anchor::LockAnchor;
pub use node_storage::NodeS3;
pub use open::open_project_catalog;
pub use remote::{
    Committed, Current, MultiTableCommit, RemoteCatalog, Swap, TableMove, TablePointers,
    TABLES_AT_ONCE,
};
pub(crate) use sql::sqlite_connection;
pub use updates::diff as table_updates;
pub use updates::{head, moved_branches, moved_since, pinned, reached, BranchMove};
