//! The scheduler's query planner: DataFusion's, knowing the engine's write node.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::{QueryPlanner, SessionState};
use datafusion::logical_expr::{LogicalPlan, UserDefinedLogicalNode};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};

use super::write_exec::WriteExec;
use super::write_node::WriteNode;

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
        // Planned on the scheduler, run by executors: each decodes it with its own S3 access.
        Ok(Some(Arc::new(WriteExec::try_new(
            input.clone(),
            node.write.clone(),
            None,
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
