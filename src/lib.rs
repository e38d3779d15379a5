//! `pipeline`: a medallion ETL engine on Apache Iceberg.
//!
//! Layers, each importing only the layers below it (see `docs/architecture.md`):
//!
//! ```text
//! cli                          the command line: arguments, one printer per command, progress
//! schedule  mcp  docs          when pipelines run by themselves (tick, daemon, status); the
//!                              MCP server for agents; the static docs site for people
//! run  inspect  maintain       one run end to end; read-only views; table upkeep
//! plan                         what a run WILL do: job graph, validation, scope, backfill, impact
//! quality                      audits on staged snapshots
//! ingest  transform            produce staged snapshots for one job
//! commit                       snapshot producer, summaries, ledger, publish protocol
//! catalog  write  lineage  engine   catalogs and run records; Parquet writers; column
//!                              lineage; DataFusion sessions
//! spec                         the TOML model
//! error  secrets  output  fault   leaves
//! ```
//!
//! Data flows one way: [`spec`] (TOML + SQL) -> [`plan`] (job graph, scope) -> [`ingest`] /
//! [`transform`] (Arrow record batch streams) -> [`write`] (partitioned Parquet data files) ->
//! [`commit`] (staged snapshots) -> [`quality`] (audit) -> [`commit::publish`] (one atomic
//! publish with the run record), driven by [`run`].

pub mod catalog;
pub mod cli;
pub mod cluster;
pub mod commit;
pub mod compact;
pub mod docs;
pub mod engine;
pub mod error;
pub mod fault;
pub mod ingest;
pub mod inspect;
pub mod lineage;
pub mod maintain;
pub mod mcp;
pub mod output;
pub mod plan;
pub mod quality;
pub mod records;
pub mod run;
pub mod schedule;
pub mod secrets;
pub mod spec;
pub mod transform;
pub mod write;

pub use error::{Error, Result};
