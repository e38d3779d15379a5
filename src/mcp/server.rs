//! The server: which project and catalog it serves, whether it may write, its query limits,
//! and the gate every call passes (refusing write tools on a read-only server, logging).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool_handler, ErrorData, RoleServer, ServerHandler};
use serde::Serialize;

use super::capped::Limits;
use super::words::agent_words;
use crate::catalog::{open_project_catalog, PipelineCatalog};
use crate::error::{Error, Result};
use crate::secrets::redact;
use crate::spec::{list_pipelines, load_with_catalog, Pipeline};

/// Tools that change tables: listed and callable only with `--allow-write`.
pub(super) const WRITE_TOOLS: [&str; 3] = ["run", "backfill", "rollback"];

/// The lake of one project, served to MCP clients.
#[derive(Clone)]
pub struct Lake {
    project: Arc<PathBuf>,
    catalog: Option<String>,
    allow_write: bool,
    pub(super) limits: Limits,
    tool_router: ToolRouter<Lake>,
}

impl Lake {
    /// Serves `project` (its default catalog, or `[catalogs.NAME]` with `catalog`); with
    /// `allow_write` the write tools are offered too.
    pub fn new(
        project: PathBuf,
        catalog: Option<String>,
        allow_write: bool,
        limits: Limits,
    ) -> Lake {
        let mut tool_router = Self::read_tools();
        if allow_write {
            tool_router += Self::write_tools();
        }
        Lake {
            project: Arc::new(project),
            catalog,
            allow_write,
            limits,
            tool_router,
        }
    }

    /// The catalog of `pipeline` (or the project's only or default one).
    pub(super) async fn open_catalog(&self, pipeline: Option<&str>) -> Result<PipelineCatalog> {
        open_project_catalog(&self.project, pipeline, self.catalog.as_deref()).await
    }

    /// The spec of `pipeline`.
    pub(super) fn spec(&self, pipeline: &str) -> Result<Pipeline> {
        load_with_catalog(&self.project, pipeline, self.catalog.as_deref())
    }

    /// `pipeline`, or the project's only pipeline.
    pub(super) fn pipeline_or_only(&self, pipeline: Option<&str>) -> Result<String> {
        if let Some(p) = pipeline {
            return Ok(p.to_string());
        }
        match list_pipelines(&self.project).as_slice() {
            [only] => Ok(only.clone()),
            all => Err(Error::Usage(format!(
                "this project has several pipelines ({}): say which with `pipeline`",
                all.join(", ")
            ))),
        }
    }

    /// The project directory.
    pub(super) fn project(&self) -> &std::path::Path {
        &self.project
    }

    /// The `--catalog` name this server was started with.
    pub(super) fn catalog_name(&self) -> Option<String> {
        self.catalog.clone()
    }
}

/// A tool's answer: the value as JSON text, or the engine's error as a tool error the agent
/// reads and can act on; secrets redacted in both.
pub(super) fn answer<T: Serialize>(result: Result<T>) -> CallToolResult {
    match result {
        Ok(value) => CallToolResult::success(vec![ContentBlock::text(
            redact(&serde_json::to_string_pretty(&value).unwrap_or_default()).into_owned(),
        )]),
        Err(e) => refusal(format!("error: {}", agent_words(&e.to_string()))),
    }
}

/// A tool's answer as structured content (a JSON object matching the tool's output schema),
/// also given as JSON text for clients that read text; secrets redacted in both.
pub(super) fn structured(result: Result<serde_json::Value>) -> CallToolResult {
    match result {
        Ok(value) => {
            let text = redact(&serde_json::to_string(&value).unwrap_or_default()).into_owned();
            let value = serde_json::from_str(&text).unwrap_or(value);
            let mut result = CallToolResult::structured(value);
            result.content = vec![ContentBlock::text(text)];
            result
        }
        Err(e) => refusal(format!("error: {}", agent_words(&e.to_string()))),
    }
}

/// A tool error with `message` (secrets redacted).
pub(super) fn refusal(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(redact(&message).into_owned())])
}

/// `name version` of the client, from its handshake.
pub(super) fn client_of(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .peer
        .peer_info()
        .map(|i| format!("{} {}", i.client_info.name, i.client_info.version))
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Lake {
    fn get_info(&self) -> ServerConfig {
        let mode = if self.allow_write {
            "Read tools, and write tools (run, backfill, rollback: each needs a reason)."
        } else {
            "Read-only: tables, schemas, queries, lineage, plans, runs and quality results."
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("pipeline", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "The Iceberg lake of a medallion pipeline (bronze, silver, gold tables). {mode} \
                 Start with list_tables; tables are named namespace.table; query takes one SELECT \
                 and returns at most {} rows.",
                self.limits.max_rows
            ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let arguments = request
            .arguments
            .as_ref()
            .map(|a| redact(&serde_json::Value::Object(a.clone()).to_string()).into_owned())
            .unwrap_or_default();
        let client = client_of(&context).unwrap_or_else(|| "unknown client".into());
        if WRITE_TOOLS.contains(&tool.as_str()) && !self.allow_write {
            tracing::info!(target: "pipeline::mcp", %tool, %client, %arguments, "refused: read-only server");
            return Ok(refusal(format!(
                "refused: `{tool}` changes tables and this server is read-only; start it with `pipeline mcp --allow-write` to offer write tools"
            ))
            .into());
        }
        let started = Instant::now();
        let response = self
            .tool_router
            .call(ToolCallContext::new(self, request, context))
            .await;
        let outcome = match &response {
            Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => "tool error",
            Ok(_) => "ok",
            Err(_) => "protocol error",
        };
        tracing::info!(
            target: "pipeline::mcp",
            %tool, %client, %arguments, outcome, seconds = started.elapsed().as_secs_f64(),
            "call"
        );
        response
    }
}
