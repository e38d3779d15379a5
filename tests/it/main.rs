//! Integration tests: the real `pipeline` binary, end to end, on small fixed data, with
//! expected values computed independently (see each file). One test binary, one file per topic.

mod common;

mod anomalies;
mod architecture;
mod atomic_publish;
mod backfill;
mod bad_input;
mod ballista;
mod command_line;
mod concurrency;
mod conflicts;
mod crash;
mod damaged;
mod deletion;
mod docs_site;
mod erase;
mod erase_reach;
mod exactly_once;
mod expectations;
mod full_refresh;
mod function_length;
mod impact;
mod incremental_audits;
mod interop;
mod maintenance;
mod many_appends;
mod mcp;
mod orphans;
mod outside_aws;
mod parallel_writes;
mod parquet_scan;
mod partitioning;
mod quarantine;
mod remote;
mod remote_catalogs;
mod retail_pipeline;
mod retention;
mod row_changes;
mod run_records;
mod schedule;
mod schema_evolution;
mod source_text;
mod spec_errors;
mod sql_gate;
mod window_functions;
