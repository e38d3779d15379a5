//! The write tools, offered only by `pipeline mcp --allow-write`: run a pipeline, backfill a
//! date range, roll a run back. Each requires a `reason`; the run's receipt records it with
//! the MCP client's name and version, so `run_receipt` and `pipeline run-info` show who asked
//! and why. They take the same run lock as the command line and publish the same way.

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{schemars, tool, tool_router, RoleServer};
use serde::Deserialize;

use super::server::{answer, client_of, Lake};
use crate::error::{Error, Result};
use crate::operation::Silent;
use crate::plan::Backfill;
use crate::records::Invocation;
use crate::rollback::rollback;
use crate::run::{run_pipeline, LockWait, RunOptions};

/// How long a write tool waits for another run of the same pipeline.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RunArgs {
    /// The pipeline to run.
    pub pipeline: String,
    /// Why (a ticket, an incident, "late February files"): recorded in the run's receipt.
    pub reason: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BackfillRunArgs {
    pub pipeline: String,
    /// First day, YYYY-MM-DD.
    pub from: String,
    /// Last day, YYYY-MM-DD (inclusive).
    pub to: String,
    /// Only these tables and what depends on them (default: every partitioned table).
    #[serde(default)]
    pub tables: Vec<String>,
    /// Why: recorded in the run's receipt.
    pub reason: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RollbackArgs {
    /// The run to undo (list_runs shows ids).
    pub run_id: String,
    pub pipeline: Option<String>,
    /// Why: recorded in the rollback's receipt.
    pub reason: String,
}

impl Lake {
    /// Who is asking, and why: refused without a reason.
    fn invocation(&self, reason: &str, context: &RequestContext<RoleServer>) -> Result<Invocation> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(Error::Usage(
                "a write needs a `reason` (a ticket, an incident): it goes into the receipt".into(),
            ));
        }
        let mut invocation = Invocation::current(Some(reason.to_string()), self.catalog_name());
        invocation.client = client_of(context);
        Ok(invocation)
    }
}

#[tool_router(router = write_tools, vis = "pub(super)")]
impl Lake {
    #[tool(
        description = "Run a pipeline: load new source files, recompute what changed, audit, and publish every table at once (or nothing). Needs a reason. Returns the run report (jobs, rows, checks, run id).",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn run(
        &self,
        Parameters(a): Parameters<RunArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        answer(
            async {
                let mut options = RunOptions::new(LockWait(Some(LOCK_WAIT)));
                options.invocation = self.invocation(&a.reason, &context)?;
                let spec = self.spec(&a.pipeline)?;
                run_pipeline(&spec, Arc::new(Silent), options).await
            }
            .await,
        )
    }

    #[tool(
        description = "Backfill: recompute the partitions of a date range in selected tables and everything downstream, published atomically. Needs a reason. Use backfill_plan first to see what it touches.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn backfill(
        &self,
        Parameters(a): Parameters<BackfillRunArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        answer(
            async {
                let spec = self.spec(&a.pipeline)?;
                let mut options = RunOptions::new(LockWait(Some(LOCK_WAIT)));
                options.invocation = self.invocation(&a.reason, &context)?;
                options.backfill = Some(Backfill::request(&spec, &a.from, &a.to, &a.tables)?);
                run_pipeline(&spec, Arc::new(Silent), options).await
            }
            .await,
        )
    }

    #[tool(
        description = "Undo a run: every table it changed goes back to its previous snapshot, atomically (refused if a table changed since). Needs a reason. Returns the rollback's receipt.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn rollback(
        &self,
        Parameters(a): Parameters<RollbackArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        answer(
            async {
                let invocation = self.invocation(&a.reason, &context)?;
                let catalog = self.open_catalog(a.pipeline.as_deref()).await?;
                let done =
                    rollback(&catalog, &a.run_id, &invocation, Arc::new(Silent), false).await?;
                done.record
                    .ok_or_else(|| Error::Internal("a rollback published no record".into()))
            }
            .await,
        )
    }
}
