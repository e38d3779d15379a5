//! The write of a transform's result as a node of its query plan, so that a cluster plans it
//! with the query: [`WriteNode`] is the logical node the driver sends (with the query below
//! it), [`ClusterPlanner`] turns it into the executors' [`WriteExec`] on the scheduler.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::{QueryPlanner, SessionState};
use datafusion::logical_expr::{
    Expr, LogicalPlan, UserDefinedLogicalNode, UserDefinedLogicalNodeCore,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};
use serde::{Deserialize, Serialize};

use super::files::written_schema;
use super::write_exec::WriteExec;
use crate::write::Destination;

/// One transform result's write on a cluster: where it goes, the file name prefix (unique per
/// run and job; each task adds its own), the run id for quarantined rows, and whether several
/// writers share it (rows dealt by the table's partition keys, each table partition to one
/// writer) or one writes it all.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterWrite {
    pub destination: Destination,
    pub prefix: String,
    pub run_id: String,
    pub parallel: bool,
}

impl ClusterWrite {
    /// As sent over the wire.
    pub(super) fn to_json(&self) -> Result<String> {
        serde_json::to_string(self)
            .map_err(|e| DataFusionError::Internal(format!("cannot encode a cluster write: {e}")))
    }

    pub(super) fn from_json(json: &[u8]) -> Result<ClusterWrite> {
        serde_json::from_slice(json)
            .map_err(|e| DataFusionError::Internal(format!("cannot decode a cluster write: {e}")))
    }
}

/// The logical node: `input`'s rows written as `write` says; its output is one row per file
/// written ([`written_schema`]).
#[derive(Debug, Clone)]
pub struct WriteNode {
    pub(super) input: LogicalPlan,
    pub(super) write: Arc<ClusterWrite>,
    /// `write` as JSON: what the node is compared and hashed by.
    json: String,
    schema: DFSchemaRef,
}

impl WriteNode {
    pub fn try_new(input: LogicalPlan, write: Arc<ClusterWrite>) -> Result<WriteNode> {
        Ok(WriteNode {
            input,
            json: write.to_json()?,
            write,
            schema: Arc::new(DFSchema::try_from(written_schema())?),
        })
    }
}

impl PartialEq for WriteNode {
    fn eq(&self, other: &Self) -> bool {
        self.json == other.json && self.input == other.input
    }
}

impl Eq for WriteNode {}

impl PartialOrd for WriteNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match self.json.cmp(&other.json) {
            Ordering::Equal => self.input.partial_cmp(&other.input),
            unequal => Some(unequal),
        }
    }
}

impl Hash for WriteNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.json.hash(state);
        self.input.hash(state);
    }
}

impl UserDefinedLogicalNodeCore for WriteNode {
    fn name(&self) -> &str {
        "PipelineWrite"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "PipelineWrite: table={}, parallel={}",
            self.write.destination.table, self.write.parallel
        )
    }

    fn with_exprs_and_inputs(
        &self,
        _exprs: Vec<Expr>,
        mut inputs: Vec<LogicalPlan>,
    ) -> Result<Self> {
        let input = inputs
            .pop()
            .ok_or_else(|| DataFusionError::Internal("PipelineWrite has one input".into()))?;
        Ok(WriteNode {
            input,
            ..self.clone()
        })
    }
}

/// Plans a [`WriteNode`] as a [`WriteExec`].
#[derive(Debug, Default)]
struct WritePlanner;

#[async_trait]
impl ExtensionPlanner for WritePlanner {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        _session_state: &SessionState,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(node) = node.as_any().downcast_ref::<WriteNode>() else {
            return Ok(None);
        };
        let input = physical_inputs
            .first()
            .ok_or_else(|| DataFusionError::Internal("PipelineWrite has one input".into()))?;
        Ok(Some(Arc::new(WriteExec::try_new(
            input.clone(),
            node.write.clone(),
        )?)))
    }
}

/// The scheduler's query planner: DataFusion's, knowing [`WriteNode`].
#[derive(Debug, Default)]
pub struct ClusterPlanner;

#[async_trait]
impl QueryPlanner for ClusterPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session_state: &SessionState,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(WritePlanner)])
            .create_physical_plan(logical_plan, session_state)
            .await
    }
}
