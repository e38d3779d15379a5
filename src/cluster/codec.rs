//! How the engine's own plan nodes cross the wire between driver, scheduler and executors:
//! Ballista's codecs, plus the transform's write ([`WriteNode`], [`WriteExec`]) and the
//! streaming `row_number()` ([`SortedRowNumberExec`]). Every process of a cluster must use
//! these (the driver, `pipeline scheduler` and `pipeline executor` do); Ballista's stock
//! binaries cannot run a plan that holds them.
//!
//! An encoded node of ours starts with [`MAGIC`] and a kind; everything else is Ballista's.

use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::TableReference;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::from_proto::parse_physical_expr;
use datafusion_proto::physical_plan::to_proto::serialize_physical_expr;
use datafusion_proto::physical_plan::PhysicalExtensionCodec;
use datafusion_proto::protobuf;
use iceberg::io::FileIO;
use prost::Message;

use super::write_exec::WriteExec;
use super::write_node::{ClusterWrite, WriteNode};
use crate::engine::SortedRowNumberExec;

/// What every encoded node of the engine's starts with.
const MAGIC: &[u8] = b"pipeline-node:";
const WRITE: &[u8] = b"write:";
const ROW_NUMBER: &[u8] = b"row-number:";

/// The payload of `kind`, when `buf` holds a node of the engine's of that kind.
fn ours<'a>(buf: &'a [u8], kind: &[u8]) -> Option<&'a [u8]> {
    buf.strip_prefix(MAGIC)?.strip_prefix(kind)
}

fn tagged(kind: &[u8], payload: &[u8], buf: &mut Vec<u8>) {
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(kind);
    buf.extend_from_slice(payload);
}

fn one_input<T: Clone>(inputs: &[T], node: &str) -> Result<T> {
    match inputs {
        [input] => Ok(input.clone()),
        _ => Err(DataFusionError::Internal(format!(
            "{node} has one input, got {}",
            inputs.len()
        ))),
    }
}

/// The logical codec of the driver and the scheduler.
#[derive(Debug, Default)]
pub struct LogicalCodec {
    ballista: BallistaLogicalExtensionCodec,
}

impl LogicalExtensionCodec for LogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        if let Some(json) = ours(buf, WRITE) {
            let write = Arc::new(ClusterWrite::from_json(json)?);
            let node = WriteNode::try_new(one_input(inputs, "PipelineWrite")?, write)?;
            return Ok(Extension {
                node: Arc::new(node),
            });
        }
        self.ballista.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        if let Some(write) = node.node.as_any().downcast_ref::<WriteNode>() {
            tagged(WRITE, write.write.to_json()?.as_bytes(), buf);
            return Ok(());
        }
        self.ballista.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        self.ballista
            .try_decode_table_provider(buf, table_ref, schema, ctx)
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        self.ballista
            .try_encode_table_provider(table_ref, node, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.ballista.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.ballista.try_encode_file_format(buf, node)
    }
}

/// [`SortedRowNumberExec`] on the wire.
#[derive(Clone, PartialEq, Message)]
struct RowNumberNode {
    #[prost(string, tag = "1")]
    label: String,
    #[prost(message, repeated, tag = "2")]
    partition_by: Vec<protobuf::PhysicalExprNode>,
    #[prost(message, optional, tag = "3")]
    schema: Option<protobuf::Schema>,
}

/// The physical codec of the scheduler and the executors.
#[derive(Default)]
pub struct PhysicalCodec {
    ballista: BallistaPhysicalExtensionCodec,
    /// The S3 access of the node decoding (an executor's own): what its writes go through.
    s3: Option<FileIO>,
}

impl PhysicalCodec {
    /// The codec of a node whose S3 files are reached through `s3`.
    pub fn for_node(s3: FileIO) -> PhysicalCodec {
        PhysicalCodec {
            ballista: BallistaPhysicalExtensionCodec::default(),
            s3: Some(s3),
        }
    }
}

// The node's FileIO is never printed.
impl std::fmt::Debug for PhysicalCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PhysicalCodec")
    }
}

impl PhysicalExtensionCodec for PhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if let Some(json) = ours(buf, WRITE) {
            let write = Arc::new(ClusterWrite::from_json(json)?);
            let input = one_input(inputs, "PipelineWriteExec")?;
            return Ok(Arc::new(WriteExec::try_new(input, write, self.s3.clone())?));
        }
        if let Some(bytes) = ours(buf, ROW_NUMBER) {
            let node = RowNumberNode::decode(bytes).map_err(|e| {
                DataFusionError::Internal(format!("cannot decode SortedRowNumberExec: {e}"))
            })?;
            let input = one_input(inputs, "SortedRowNumberExec")?;
            let input_schema = input.schema();
            let partition_by = node
                .partition_by
                .iter()
                .map(|e| parse_physical_expr(e, ctx, &input_schema, self))
                .collect::<Result<Vec<_>>>()?;
            let schema = node.schema.as_ref().ok_or_else(|| {
                DataFusionError::Internal("SortedRowNumberExec: no schema".into())
            })?;
            let schema = Arc::new(Schema::try_from(schema)?);
            return Ok(Arc::new(SortedRowNumberExec::new(
                input,
                partition_by,
                schema,
                node.label,
            )));
        }
        self.ballista.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: Arc<dyn ExecutionPlan>, buf: &mut Vec<u8>) -> Result<()> {
        if let Some(write) = node.as_any().downcast_ref::<WriteExec>() {
            tagged(WRITE, write.write.to_json()?.as_bytes(), buf);
            return Ok(());
        }
        if let Some(numbering) = node.as_any().downcast_ref::<SortedRowNumberExec>() {
            let message = RowNumberNode {
                label: numbering.label().to_string(),
                partition_by: numbering
                    .partition_by()
                    .iter()
                    .map(|e| serialize_physical_expr(e, self))
                    .collect::<Result<Vec<_>>>()?,
                schema: Some(protobuf::Schema::try_from(numbering.schema().as_ref())?),
            };
            tagged(ROW_NUMBER, &message.encode_to_vec(), buf);
            return Ok(());
        }
        self.ballista.try_encode(node, buf)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field};
    use datafusion::physical_plan::empty::EmptyExec;
    use datafusion_proto::physical_plan::AsExecutionPlan;
    use datafusion_proto::protobuf::PhysicalPlanNode;
    use iceberg::io::FileIOBuilder;
    use iceberg::spec::{
        FormatVersion, NestedField, PartitionSpec, PrimitiveType, Schema as IcebergSchema, Type,
    };
    use iceberg_storage_opendal::OpenDalStorageFactory;

    use super::*;
    use crate::write::{Destination, FileLayout};

    fn holds(bytes: &[u8], text: &str) -> bool {
        bytes.windows(text.len()).any(|w| w == text.as_bytes())
    }

    /// The plan bytes the driver and the scheduler send hold a write's layout and never the
    /// S3 credentials of the node that made it: an executor writes with its own.
    #[test]
    fn a_write_on_the_wire_carries_no_credentials() {
        let schema = IcebergSchema::builder()
            .with_fields(vec![NestedField::required(
                1,
                "n",
                Type::Primitive(PrimitiveType::Long),
            )
            .into()])
            .build()
            .unwrap();
        let layout = FileLayout {
            spec: PartitionSpec::unpartition_spec(),
            schema,
            data_location: "s3://warehouse-bucket/silver/wire_check/data".into(),
            format_version: FormatVersion::V2,
        };
        let write = ClusterWrite {
            destination: Destination {
                table: "silver.wire_check".into(),
                layout,
                quarantine: None,
                target_file_size: 1 << 20,
            },
            prefix: "run-1".into(),
            run_id: "run-1".into(),
            parallel: false,
        };
        let secrets = [
            ("s3.access-key-id", "AKIANEVERONTHEWIRE"),
            ("s3.secret-access-key", "secret-never-on-the-wire"),
            ("s3.session-token", "token-never-on-the-wire"),
        ];
        let file_io = FileIOBuilder::new(Arc::new(OpenDalStorageFactory::S3 {
            customized_credential_load: None,
        }))
        .with_props(secrets)
        .build();
        let input = Arc::new(EmptyExec::new(Arc::new(Schema::new(vec![Field::new(
            "n",
            DataType::Int64,
            false,
        )]))));
        let exec = WriteExec::try_new(input, Arc::new(write), Some(file_io)).unwrap();
        let codec = PhysicalCodec::default();
        let node = PhysicalPlanNode::try_from_physical_plan(Arc::new(exec), &codec).unwrap();
        let bytes = node.encode_to_vec();
        assert!(holds(&bytes, "silver.wire_check") && holds(&bytes, "warehouse-bucket"));
        for (_, secret) in secrets {
            assert!(!holds(&bytes, secret), "{secret} is in the plan");
        }
    }
}
