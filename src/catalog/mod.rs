//! The Iceberg catalog behind a pipeline: the embedded SQL catalog (SQLite file + local
//! warehouse folder, a real `iceberg-catalog-sql` catalog that PyIceberg's `SqlCatalog` reads),
//! an AWS S3 Tables table bucket, or any Iceberg REST catalog.
//!
//! This layer opens catalogs and reads their tables ([`PipelineCatalog`]), moves single table
//! pointers by compare-and-set (and, on REST servers that offer it, several at once), and
//! stores and reads run records ([`RunRecord`]): in the catalog database (embedded) or in the
//! control table `pipeline_meta.runs` (remote). The run locks that keep two commands of one
//! pipeline apart on a machine ([`lock`]) are kept next to the catalog. How a run publishes with these pieces is
//! `commit::publish`'s business.

mod connection;
mod control;
mod erase_receipt;
mod local_fs;
pub mod lock;
mod open;
mod receipt;
mod record;
mod remote;
mod rest;
mod runs;
mod s3tables;
mod sql;
mod storage;
mod updates;

pub use connection::{Backend, PipelineCatalog};
pub use control::{control_name, control_table, run_records, CONTROL_NAMESPACE, CONTROL_TABLE};
pub use erase_receipt::{EraseReceipt, ErasedSource, ErasedTable};
pub use local_fs::{lies_inside, LocalStorageFactory};
pub use open::open_project_catalog;
pub use receipt::Invocation;
pub use record::{
    new_run_id, tick_key, ExpiredFiles, QualityResult, RunKind, RunRecord, TableRecord,
};
pub use remote::{
    Committed, Current, MultiTableCommit, RemoteCatalog, Swap, TableMove, TablePointers,
};
pub(crate) use runs::insert as insert_run_record;
pub(crate) use sql::sqlite_connection;
