//! The DataFusion session a transform runs in: only the tables registered here exist.

use std::sync::Arc;

use datafusion::catalog::{MemorySchemaProvider, TableProvider};
use datafusion::common::TableReference;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::window_rule::StreamingRowNumber;

use crate::error::{Error, Result};
use crate::spec::TableName;

/// A session with no tables, no URL tables and no information schema.
pub fn new_session() -> SessionContext {
    let mut config = SessionConfig::new()
        .with_information_schema(false)
        .with_default_catalog_and_schema("datafusion", "public");
    // Keep source positions so planning errors can name the SQL line.
    config.options_mut().sql_parser.collect_spans = true;
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(StreamingRowNumber))
        .build();
    SessionContext::new_with_state(state)
}

/// Makes `provider` readable as `namespace.table`.
pub fn register_table(
    ctx: &SessionContext,
    name: &TableName,
    provider: Arc<dyn TableProvider>,
) -> Result<()> {
    let catalog = ctx
        .catalog("datafusion")
        .ok_or_else(|| Error::Usage("the default DataFusion catalog is missing".into()))?;
    if catalog.schema(&name.namespace).is_none() {
        catalog.register_schema(&name.namespace, Arc::new(MemorySchemaProvider::new()))?;
    }
    ctx.register_table(
        TableReference::partial(name.namespace.clone(), name.name.clone()),
        provider,
    )?;
    Ok(())
}
