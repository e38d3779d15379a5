//! The DataFusion session a transform runs in: only the tables registered here exist.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use datafusion::catalog::{MemorySchemaProvider, TableProvider};
use datafusion::common::TableReference;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::object_store::ObjectStoreRegistry;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::case_views::case_functions;
use super::window_rule::StreamingRowNumber;

use crate::error::{Error, Result};
use crate::spec::TableName;

/// The stack of every thread that plans or runs queries (the runtime's workers, the MCP query
/// runtime's): plans are walked recursively (DataFusion's planner, protobuf encoding of a plan
/// sent to a cluster, and decoding it there), and tokio's 2 MiB default overflows on the retail
/// transforms' plans in a debug build. The SQL gate keeps nesting within what this holds.
pub const WORKER_STACK_BYTES: usize = 16 * 1024 * 1024;

/// Default memory budget of query execution, shared by all transforms of a process.
pub const DEFAULT_MEMORY_LIMIT_MB: usize = 1024;

/// The pool size a command set for this process ([`set_memory_limit_mb`]); 0: none set.
static LIMIT_MB: AtomicUsize = AtomicUsize::new(0);

/// The size of the process's memory pool, in MiB: what [`set_memory_limit_mb`] set, else
/// `PIPELINE_MEMORY_LIMIT_MB`, else 1024.
pub fn memory_limit_mb() -> usize {
    match LIMIT_MB.load(Ordering::SeqCst) {
        0 => std::env::var("PIPELINE_MEMORY_LIMIT_MB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|v| *v > 0)
            .unwrap_or(DEFAULT_MEMORY_LIMIT_MB),
        mb => mb,
    }
}

/// Sizes the process's memory pool (a command with a memory ceiling keeps the pool below
/// it, so operators spill before the ceiling strikes). Only before the first query of the
/// process: the pool is made once.
pub fn set_memory_limit_mb(mb: usize) {
    LIMIT_MB.store(mb.max(1), Ordering::SeqCst);
}

/// The process-wide execution environment: one memory pool of [`memory_limit_mb`] shared
/// fairly by every running query; sorts and aggregations that need more spill to temporary
/// files instead of growing the process.
pub fn runtime_env() -> Arc<RuntimeEnv> {
    static ENV: OnceLock<Arc<RuntimeEnv>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mb = memory_limit_mb();
        let pool = Arc::new(FairSpillPool::new(mb * 1024 * 1024));
        RuntimeEnvBuilder::new()
            .with_memory_pool(pool)
            .build_arc()
            .unwrap_or_else(|_| Arc::new(RuntimeEnv::default()))
    })
    .clone()
}

/// The runtime of a cluster node: the process-wide memory budget of [`runtime_env`], with
/// `stores` for the files plans name.
pub fn node_runtime_env(
    stores: Arc<dyn ObjectStoreRegistry>,
) -> datafusion::error::Result<Arc<RuntimeEnv>> {
    RuntimeEnvBuilder::new()
        .with_memory_pool(runtime_env().memory_pool.clone())
        .with_object_store_registry(stores)
        .build_arc()
}

/// A session with no tables, no URL tables and no information schema, executing within the
/// process-wide memory budget (`lower` and `upper` of `Utf8View` strings by
/// [`case_functions`]).
pub fn new_session() -> SessionContext {
    let mut config = SessionConfig::new()
        .with_information_schema(false)
        .with_default_catalog_and_schema("datafusion", "public");
    // Keep source positions so planning errors can name the SQL line.
    config.options_mut().sql_parser.collect_spans = true;
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime_env())
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(StreamingRowNumber))
        .build();
    let ctx = SessionContext::new_with_state(state);
    for function in case_functions() {
        ctx.register_udf(function);
    }
    ctx
}

/// Makes `provider` readable as `namespace.table`.
pub fn register_table(
    ctx: &SessionContext,
    name: &TableName,
    provider: Arc<dyn TableProvider>,
) -> Result<()> {
    let catalog = ctx
        .catalog("datafusion")
        .ok_or_else(|| Error::Internal("the default DataFusion catalog is missing".into()))?;
    if catalog.schema(&name.namespace).is_none() {
        catalog.register_schema(&name.namespace, Arc::new(MemorySchemaProvider::new()))?;
    }
    ctx.register_table(
        TableReference::partial(name.namespace.clone(), name.name.clone()),
        provider,
    )?;
    Ok(())
}

/// A session where each of `tables` is an empty table with its schema in `schemas`, for
/// planning queries without reading data. A table without a schema there is left out (the
/// query then fails to plan, naming it).
pub fn session_over(
    schemas: &std::collections::HashMap<TableName, arrow::datatypes::SchemaRef>,
    tables: &[TableName],
) -> Result<SessionContext> {
    let session = new_session();
    for table in tables {
        if let Some(schema) = schemas.get(table) {
            let empty = datafusion::datasource::empty::EmptyTable::new(schema.clone());
            register_table(&session, table, Arc::new(empty))?;
        }
    }
    Ok(session)
}

#[cfg(test)]
mod tests {
    use super::super::case_views::CaseOfViews;
    use super::*;

    /// SQL run in an engine session calls `lower` and `upper` of [`case_functions`].
    #[tokio::test]
    async fn sessions_map_the_case_of_views_with_the_engines_functions() {
        let ctx = new_session();
        for name in ["lower", "upper"] {
            let function = ctx.state().scalar_functions()[name].clone();
            assert!(function.inner().as_any().is::<CaseOfViews>(), "{name}");
        }
        let batches = ctx
            .sql("SELECT lower(arrow_cast('ÀbC Straße', 'Utf8View')), upper(arrow_cast('straße', 'Utf8View'))")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let text = arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        assert!(
            text.contains("| àbc straße") && text.contains("| STRASSE"),
            "{text}"
        );
    }
}
