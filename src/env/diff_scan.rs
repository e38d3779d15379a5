//! The files two snapshots of one table do not share, and a DataFusion table over a chosen set
//! of them: `env diff` reads only those (a file both sides hold adds the same rows to both,
//! so it cancels in a multiset difference). Each row carries its file's partition
//! (`_partition`, e.g. `order_date_month=2026-02`), for counts per partition.
//!
//! Files are read by iceberg's own Arrow reader (by field id, on every catalog's storage),
//! streamed: nothing is collected.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{ArrayRef, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::catalog::TableProvider;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::arrow::{schema_to_arrow_schema, ArrowReaderBuilder};
use iceberg::scan::FileScanTask;
use iceberg::table::Table;

use crate::error::Result;
use crate::inspect::snapshot_files;

/// The column holding a row's partition.
pub const PARTITION: &str = "_partition";

/// A planned read of one data file, with the file's partition as people read it.
pub type Planned = (FileScanTask, String);

/// The files of snapshot `id` of `table` as planned reads of `columns`, each with its
/// partition.
pub async fn planned(table: &Table, id: i64, columns: &[String]) -> Result<Vec<Planned>> {
    let tasks: Vec<FileScanTask> = table
        .scan()
        .snapshot_id(id)
        .select(columns.iter().cloned())
        .build()?
        .plan_files()
        .await?
        .try_collect()
        .await?;
    let labels = partitions(table, id).await?;
    Ok(tasks
        .into_iter()
        .map(|t| {
            let label = labels.get(&t.data_file_path).cloned().unwrap_or_default();
            (t, label)
        })
        .collect())
}

/// The partition of every live data file of snapshot `id`, by path (a planned read does not
/// carry its file's partition spec).
async fn partitions(table: &Table, id: i64) -> Result<HashMap<String, String>> {
    let Some(snapshot) = table.metadata().snapshot_by_id(id) else {
        return Ok(HashMap::new());
    };
    Ok(snapshot_files(table, snapshot)
        .await?
        .into_iter()
        .map(|f| (f.path, f.partition))
        .collect())
}

/// The files only `a` has, those only `b` has (by path), and how many both have.
pub fn split(a: Vec<Planned>, b: Vec<Planned>) -> (Vec<Planned>, Vec<Planned>, usize) {
    let paths = |files: &[Planned]| -> HashSet<String> {
        files.iter().map(|t| t.0.data_file_path.clone()).collect()
    };
    let (in_a, in_b) = (paths(&a), paths(&b));
    let shared = in_a.intersection(&in_b).count();
    let a_only = a
        .into_iter()
        .filter(|t| !in_b.contains(&t.0.data_file_path))
        .collect();
    let b_only = b
        .into_iter()
        .filter(|t| !in_a.contains(&t.0.data_file_path))
        .collect();
    (a_only, b_only, shared)
}

/// A table of the rows of `tasks` (read as `columns` of snapshot `id`'s schema) with their
/// partition in [`PARTITION`].
pub fn files_table(
    table: &Table,
    id: i64,
    columns: &[String],
    tasks: Vec<Planned>,
) -> Result<Arc<dyn TableProvider>> {
    let metadata = table.metadata();
    let snapshot = metadata.snapshot_by_id(id).ok_or_else(|| {
        crate::error::Error::Internal(format!("snapshot {id} vanished while diffing"))
    })?;
    let schema = snapshot.schema(metadata)?;
    let mut fields: Vec<Field> = Vec::with_capacity(columns.len() + 1);
    let arrow = schema_to_arrow_schema(&schema)?;
    for column in columns {
        let field = arrow.field_with_name(column)?;
        fields.push(Field::new(column, field.data_type().clone(), true));
    }
    fields.push(Field::new(PARTITION, DataType::Utf8, false));
    let stream = FileRows {
        schema: Arc::new(ArrowSchema::new(fields)),
        table: table.clone(),
        tasks,
    };
    let provider = StreamingTable::try_new(stream.schema.clone(), vec![Arc::new(stream)])?;
    Ok(Arc::new(provider))
}

/// The rows of some planned files, one file after another.
#[derive(Debug)]
struct FileRows {
    schema: SchemaRef,
    table: Table,
    tasks: Vec<Planned>,
}

impl PartitionStream for FileRows {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = self.schema.clone();
        let file_io = self.table.file_io().clone();
        let tasks = self.tasks.clone();
        let stream = futures::stream::iter(tasks)
            .then(move |(task, label)| {
                let (file_io, schema) = (file_io.clone(), schema.clone());
                async move { read_task(file_io, schema, task, label) }
            })
            .try_flatten();
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream))
    }
}

type Batches = futures::stream::BoxStream<'static, datafusion::error::Result<RecordBatch>>;

/// The rows of one planned file, as `schema` (its partition appended).
fn read_task(
    file_io: iceberg::io::FileIO,
    schema: SchemaRef,
    task: FileScanTask,
    label: String,
) -> datafusion::error::Result<Batches> {
    let external = |e: iceberg::Error| DataFusionError::External(Box::new(e));
    let runtime = iceberg::Runtime::try_current().map_err(external)?;
    let reader = ArrowReaderBuilder::new(file_io, runtime).build();
    let tasks = futures::stream::iter([Ok(task)]).boxed();
    let batches = reader.read(tasks).map_err(external)?.stream();
    Ok(batches
        .map_err(external)
        .and_then(move |batch| {
            let out = with_partition(&schema, &batch, &label);
            async move { out }
        })
        .boxed())
}

/// `batch` as `schema`: its columns cast where the types differ, the partition appended.
fn with_partition(
    schema: &SchemaRef,
    batch: &RecordBatch,
    label: &str,
) -> datafusion::error::Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        columns.push(match column.data_type() == field.data_type() {
            true => column.clone(),
            false => cast(column, field.data_type())?,
        });
    }
    let rows = batch.num_rows();
    columns.push(Arc::new(StringArray::from(vec![label; rows])));
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}
