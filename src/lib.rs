//! `pipeline`: a medallion ETL engine on Apache Iceberg.
//!
//! Data flows one way: [`spec`] (TOML + SQL) -> [`plan`] (DAG) -> [`ingest`] / [`transform`]
//! (Arrow record batch streams) -> [`write`] (partitioned Parquet data files) -> [`commit`]
//! (staged snapshots, then one atomic publish) -> [`run`] (progress and summary).
//! The CLI in `main.rs` holds no logic of its own.

pub mod catalog;
pub mod commit;
pub mod context;
pub mod error;
pub mod fault;
pub mod impact;
pub mod ingest;
pub mod inspect;
pub mod lineage;
pub mod orphans;
pub mod output;
pub mod plan;
pub mod quality;
pub mod receipt;
pub mod run;
pub mod secrets;
pub mod spec;
pub mod transform;
pub mod write;

pub use error::{Error, Result};
