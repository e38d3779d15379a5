//! `pipeline`: a medallion ETL engine on Apache Iceberg.
//!
//! Layers, each importing only the layers below it (see `docs/architecture.md`):
//!
//! ```text
//! cli                          the command line: arguments, one printer per command, progress
//! schedule  mcp  docs          when pipelines run by themselves (tick, daemon, status); the
//!                              MCP server for agents; the static docs site for people
//! erase                        one subject's rows out of every table that holds them
//! run                          `pipeline run` and its backfills, end to end
//! maintain  rollback  dml  env   table upkeep (compaction, expiry, check, orphans);
//!                              undoing a recorded run; `pipeline sql` row changes;
//!                              environments (list, drop)
//! operation  inspect           the skeleton every table-changing command runs on (lock,
//!                              recover, stage, audit, record, publish); read-only views
//! plan                         what a run WILL do: job graph, validation, scope, backfill, impact
//! quality                      audits on staged snapshots
//! ingest  transform            produce staged snapshots for one job
//! commit  cluster              snapshot producers, summaries, ledger, publish protocol;
//!                              transforms on a Ballista cluster
//! records                      run records, erase receipts, the control table, run locks
//! catalog  write  engine  lineage   catalogs; Parquet writers; DataFusion sessions and the
//!                              SQL gate; column lineage
//! spec                         the TOML model
//! secrets  output  fault  memory_cap  id_text   leaves: secret redaction, terminal output,
//!                              crash points, the memory ceiling of `pipeline query`,
//!                              snapshot ids as JSON strings
//! error                        the engine's one error type
//! ```
//!
//! Data flows one way: [`spec`] (TOML + SQL) -> [`plan`] (job graph, scope) -> [`ingest`] /
//! [`transform`] (Arrow record batch streams) -> [`write`] (partitioned Parquet data files) ->
//! [`commit`] (staged snapshots) -> [`quality`] (audit) -> [`commit::publish`] (one atomic
//! publish with the run record), driven by [`run`] on the skeleton of [`operation`].

#[macro_use]
pub mod secrets;
pub mod catalog;
pub mod cli;
pub mod cluster;
pub mod commit;
pub mod dml;
pub mod docs;
pub mod engine;
pub mod env;
pub mod erase;
pub mod error;
pub mod fault;
pub mod id_text;
pub mod ingest;
pub mod inspect;
pub mod lineage;
pub mod maintain;
pub mod mcp;
pub mod memory_cap;
pub mod operation;
pub mod output;
pub mod plan;
pub mod quality;
pub mod records;
pub mod rollback;
pub mod run;
pub mod schedule;
pub mod spec;
pub mod transform;
pub mod write;

pub use error::{Error, Result};
