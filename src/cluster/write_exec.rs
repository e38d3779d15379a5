//! The write, as an executor runs it: each task writes its input partition's rows into data
//! files in the table's location with the engine's own writer (`write::drain`: the same
//! partitioning, Parquet settings, file sizes and field ids as on one machine; `drop`
//! expectations split off the quarantined rows the same way) and answers with the files'
//! entries, never with rows. Several tasks share a result only with rows dealt by the table's
//! partition keys (the scheduler inserts that shuffle: [`ExecutionPlan::required_input_distribution`]),
//! so each table partition is written by one task; otherwise one task writes everything.
//!
//! A task run again (its executor was lost) writes new files under a name of its own; the
//! files of the lost attempt are never reported, so nothing commits them (`pipeline orphans`
//! finds them).

use std::any::Any;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use datafusion::common::DFSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::ExecutionProps;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::{create_physical_expr, EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties,
    Partitioning, PlanProperties,
};
use iceberg::io::{FileIO, FileIOBuilder};

use super::files::{written_batch, written_schema};
use super::write_node::ClusterWrite;
use crate::catalog::LocalStorageFactory;
use crate::engine::remote_scheme;
use crate::error::Error;
use crate::fault::pause_point;
use crate::write::{drain, partition_keys};

/// Writes its input's rows as [`ClusterWrite`] says; one output row per file written.
pub struct WriteExec {
    input: Arc<dyn ExecutionPlan>,
    pub(super) write: Arc<ClusterWrite>,
    /// The table's partition keys over the input rows (empty: a single writer).
    keys: Vec<Arc<dyn PhysicalExpr>>,
    /// The S3 access of the executor running it (its own credentials), for tables on S3.
    s3: Option<FileIO>,
    properties: Arc<PlanProperties>,
}

impl WriteExec {
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        write: Arc<ClusterWrite>,
        s3: Option<FileIO>,
    ) -> Result<WriteExec> {
        let keys = match partition_keys(&write.destination.layout) {
            Some(keys) if write.parallel => {
                let schema = Arc::new(DFSchema::try_from(input.schema())?);
                let props = ExecutionProps::new();
                // Coerced as a session would.
                let simplifier =
                    ExprSimplifier::new(SimplifyContext::default().with_schema(schema.clone()));
                keys.into_iter()
                    .map(|k| create_physical_expr(&simplifier.coerce(k, &schema)?, &schema, &props))
                    .collect::<Result<Vec<_>>>()?
            }
            _ => Vec::new(),
        };
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(written_schema()),
            Partitioning::UnknownPartitioning(input.output_partitioning().partition_count()),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Ok(WriteExec {
            input,
            write,
            keys,
            s3,
            properties,
        })
    }
}

// The executor's FileIO is left out: nothing of its S3 access is printed.
impl fmt::Debug for WriteExec {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("WriteExec")
            .field("input", &self.input)
            .field("write", &self.write)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl DisplayAs for WriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "PipelineWriteExec: table={}, writers={}",
            self.write.destination.table,
            if self.keys.is_empty() {
                "one"
            } else {
                "by partition"
            }
        )
    }
}

impl ExecutionPlan for WriteExec {
    fn name(&self) -> &str {
        "PipelineWriteExec"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        if self.keys.is_empty() {
            vec![Distribution::SinglePartition]
        } else {
            vec![Distribution::HashPartitioned(self.keys.clone())]
        }
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![!self.keys.is_empty()]
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children
            .pop()
            .ok_or_else(|| DataFusionError::Internal("PipelineWriteExec has one input".into()))?;
        Ok(Arc::new(WriteExec::try_new(
            input,
            self.write.clone(),
            self.s3.clone(),
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let write = self.write.clone();
        let file_io = self.file_io()?;
        let done = async move {
            // Unique per attempt: a task run again never overwrites (or reports) the files
            // of an attempt that was lost.
            let prefix = format!(
                "{}-{partition}-{}",
                write.prefix,
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            );
            let progress = AtomicU64::new(0);
            let written = drain(
                input,
                &write.destination,
                &file_io,
                &prefix,
                &write.run_id,
                &progress,
                Error::DataFusion,
            )
            .await
            .map_err(to_datafusion)?;
            pause_point("cluster-files-written");
            written_batch(written, &write.destination).map_err(to_datafusion)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            written_schema(),
            futures::stream::once(done),
        )))
    }
}

impl WriteExec {
    /// What the table's files are written through: the executor's own S3 access for a table
    /// on S3, the local file system otherwise.
    fn file_io(&self) -> Result<FileIO> {
        let location = &self.write.destination.layout.data_location;
        if remote_scheme(location).is_none() {
            return Ok(FileIOBuilder::new(Arc::new(LocalStorageFactory)).build());
        }
        self.s3.clone().ok_or_else(|| {
            DataFusionError::Plan(format!(
                "{location} is on S3, and this process has no S3 access of its own (only `pipeline executor` writes a cluster's files)"
            ))
        })
    }
}

/// The engine's error as a query's: a query failure passes as it was, anything else (a file
/// that cannot be written) keeps its message and source.
fn to_datafusion(e: Error) -> DataFusionError {
    match e {
        Error::DataFusion(e) => e,
        e => DataFusionError::External(Box::new(e)),
    }
}
