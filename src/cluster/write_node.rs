//! The write of a transform's result as a node of its query plan, so that a cluster plans it
//! with the query: [`WriteNode`] is the logical node the driver sends (with the query below
//! it); the scheduler's planner (`planner.rs`) turns it into the executors' `WriteExec`.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};
use serde::{Deserialize, Serialize};

use super::files::written_schema;
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
