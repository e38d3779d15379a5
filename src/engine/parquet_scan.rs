//! Reading an Iceberg table with DataFusion's own Parquet source. iceberg-datafusion's scan is
//! one DataFusion partition decoded by iceberg's Arrow reader, so a scan uses one core however
//! many there are. [`table_provider`] plans the snapshot's data files with iceberg (manifests,
//! partition and column-bound pruning) and hands them to DataFusion's Parquet source in one
//! file group per target partition: decoding in parallel, with row-group and page pruning.
//!
//! DataFusion maps a file's columns to the table by name, Iceberg by field id. The two agree
//! when no column of the table was ever renamed, or dropped and added again under its old name,
//! and the columns are primitive: only then is this path taken. A scan whose files carry delete
//! files, files neither local nor on S3 (`s3://`, `s3a://`), a path the object store would
//! have to escape, or a local file missing or of another size than its metadata records (one
//! `stat` each), is read by iceberg-datafusion's provider, as before. Files on S3 are read
//! through the table's own FileIO ([`FileIoStore`]), registered with the session under a name
//! of its own per table location; one of them missing or resized fails the scan with an error
//! naming it when it is read (a healthy scan asks storage for nothing but its reads).

use std::any::Any;
use std::sync::Arc;

use arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DFSchema, DataFusionError};
use datafusion::config::TableParquetOptions;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::TableType;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::object_store::ObjectStore;
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::ExecutionPlan;
use futures::TryStreamExt;
use iceberg::scan::FileScanTask;
use iceberg::table::Table;
use iceberg_datafusion::physical_plan::convert_filters_to_predicate;
use iceberg_datafusion::IcebergStaticTableProvider;

use super::file_io_store::FileIoStore;
use super::native_files::{columns_match_by_name, local, native_path};
use super::remote_files::{remote_files, remote_scheme, store_name};
use super::tail_reader::TailReaderFactory;

/// A provider reading `table` (at `snapshot_id`, or its current snapshot) with DataFusion's
/// Parquet source where that reads exactly what Iceberg would, else iceberg-datafusion's.
/// Its schema is iceberg-datafusion's either way.
pub async fn table_provider(
    table: Table,
    snapshot_id: Option<i64>,
) -> iceberg::Result<Arc<dyn TableProvider>> {
    let fallback = match snapshot_id {
        Some(id) => {
            IcebergStaticTableProvider::try_new_from_table_snapshot(table.clone(), id).await?
        }
        None => IcebergStaticTableProvider::try_new_from_table(table.clone()).await?,
    };
    let location = table.metadata().location();
    let readable = local(location) || remote_scheme(location).is_some();
    if !readable || !columns_match_by_name(table.metadata()) {
        return Ok(Arc::new(fallback));
    }
    Ok(Arc::new(NativeParquetTable {
        schema: with_string_views(&fallback.schema()),
        fallback,
        table,
        snapshot_id,
    }))
}

#[derive(Debug)]
struct NativeParquetTable {
    schema: SchemaRef,
    fallback: IcebergStaticTableProvider,
    table: Table,
    snapshot_id: Option<i64>,
}

/// `schema` with its string columns as string views. A view is 16 bytes (the string itself
/// when it has at most 12): repartitions, sorts and joins move views instead of copying every
/// string, e.g. the 45-byte `_source_file` a deduplication sorts by (a 1M run: -2.8 %
/// instructions). Writers turn views back into strings (`write::normalize`).
fn with_string_views(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 => Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8View)),
            _ => f.clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `plan` (iceberg's reader: strings as `Utf8`) with its string columns cast to views, as
/// [`with_string_views`] declares them.
fn as_string_views(
    plan: Arc<dyn ExecutionPlan>,
) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
    let schema = plan.schema();
    if !schema
        .fields()
        .iter()
        .any(|f| f.data_type() == &DataType::Utf8)
    {
        return Ok(plan);
    }
    let exprs: Vec<(Arc<dyn PhysicalExpr>, String)> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let column: Arc<dyn PhysicalExpr> = Arc::new(Column::new(f.name(), i));
            let expr = match f.data_type() {
                DataType::Utf8 => Arc::new(CastExpr::new(column, DataType::Utf8View, None)),
                _ => column,
            };
            (expr, f.name().clone())
        })
        .collect();
    Ok(Arc::new(ProjectionExec::try_new(exprs, plan)?))
}

fn df_error(e: iceberg::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// `tasks` spread over at most `n` groups of about the same bytes (largest first, each to
/// the lightest group).
fn file_groups(mut tasks: Vec<(PartitionedFile, u64)>, n: usize) -> Vec<FileGroup> {
    tasks.sort_by_key(|t| std::cmp::Reverse(t.1));
    let n = n.clamp(1, tasks.len().max(1));
    let mut groups: Vec<(u64, Vec<PartitionedFile>)> = (0..n).map(|_| (0, Vec::new())).collect();
    for (file, bytes) in tasks {
        let lightest = groups
            .iter_mut()
            .min_by_key(|g| g.0)
            .expect("at least one group");
        lightest.0 += bytes;
        lightest.1.push(file);
    }
    groups
        .into_iter()
        .filter(|g| !g.1.is_empty())
        .map(|g| FileGroup::new(g.1))
        .collect()
}

/// A task's file (or the byte range of it the task reads) at `path` in the object store.
fn partitioned_file(task: &FileScanTask, path: String) -> PartitionedFile {
    if task.start == 0 && task.length == task.file_size_in_bytes {
        PartitionedFile::new(path, task.file_size_in_bytes)
    } else {
        PartitionedFile::new_with_range(
            path,
            task.file_size_in_bytes,
            task.start as i64,
            (task.start + task.length) as i64,
        )
    }
}

impl NativeParquetTable {
    /// The object store and the paths in it of the tasks' files when DataFusion reads them
    /// as Iceberg would; `None` when iceberg reads them (see the module doc). A table on S3
    /// gets its store (over its own FileIO) registered with the session, replacing the one an
    /// earlier scan of the same table registered, and returned too (its files are read
    /// through a [`TailReaderFactory`]).
    async fn native_files(
        &self,
        state: &dyn Session,
        tasks: &[FileScanTask],
    ) -> datafusion::error::Result<Option<NativeFiles>> {
        let location = self.table.metadata().location();
        let Some(scheme) = remote_scheme(location) else {
            let paths = tasks.iter().map(native_path).collect::<Result<_, _>>();
            return Ok(paths.ok().map(|paths| NativeFiles {
                url: ObjectStoreUrl::local_filesystem(),
                paths,
                remote: None,
            }));
        };
        let file_io = self.table.file_io();
        let Some(paths) = remote_files(scheme, tasks) else {
            return Ok(None);
        };
        let sizes = paths
            .iter()
            .zip(tasks)
            .map(|(p, t)| (p.clone(), t.file_size_in_bytes))
            .collect();
        let url = ObjectStoreUrl::parse(store_name(location))?;
        let store: Arc<dyn ObjectStore> =
            Arc::new(FileIoStore::new(scheme, file_io.clone(), sizes));
        state
            .runtime_env()
            .register_object_store(url.as_ref(), store.clone());
        Ok(Some(NativeFiles {
            url,
            paths,
            remote: Some(store),
        }))
    }
}

/// Where a scan's files are read from: the store's URL, each file's path in it, and the store
/// itself when it is remote.
struct NativeFiles {
    url: ObjectStoreUrl,
    paths: Vec<String>,
    remote: Option<Arc<dyn ObjectStore>>,
}

#[async_trait]
impl TableProvider for NativeParquetTable {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let mut builder = self.table.scan();
        if let Some(id) = self.snapshot_id {
            builder = builder.snapshot_id(id);
        }
        if let Some(predicate) = convert_filters_to_predicate(filters) {
            builder = builder.with_filter(predicate);
        }
        let tasks: Vec<FileScanTask> = builder
            .build()
            .map_err(df_error)?
            .plan_files()
            .await
            .map_err(df_error)?
            .try_collect()
            .await
            .map_err(df_error)?;
        // Iceberg reads what DataFusion cannot read as it would (its errors name the file
        // and what is wrong with it).
        let Some(NativeFiles { url, paths, remote }) = self.native_files(state, &tasks).await?
        else {
            let plan = self
                .fallback
                .scan(state, projection, filters, limit)
                .await?;
            return as_string_views(plan);
        };
        let files: Vec<(PartitionedFile, u64)> = tasks
            .iter()
            .zip(paths)
            .map(|(task, path)| (partitioned_file(task, path), task.length))
            .collect();
        if files.is_empty() {
            let schema = match projection {
                Some(p) => Arc::new(self.schema.project(p)?),
                None => self.schema.clone(),
            };
            return Ok(Arc::new(EmptyExec::new(schema)));
        }
        // Strings are read as views (see [`with_string_views`]).
        let mut options = TableParquetOptions {
            global: state.config_options().execution.parquet.clone(),
            ..TableParquetOptions::default()
        };
        options.global.schema_force_view_types = true;
        let hint = options.global.metadata_size_hint;
        let mut source =
            ParquetSource::new(self.schema.clone()).with_table_parquet_options(options);
        // As DataFusion's own Parquet tables read: footer, metadata and page index in one
        // read of the file's tail (512 KiB by default; on S3 one request instead of three).
        if let Some(hint) = hint {
            source = source.with_metadata_size_hint(hint);
        }
        // On S3 the tail is at least 1 MiB, and later reads inside it come from memory (see
        // `tail_reader.rs`).
        if let Some(store) = remote {
            source =
                source.with_parquet_file_reader_factory(Arc::new(TailReaderFactory::new(store)));
        }
        if let Some(filter) = conjunction(filters.to_vec()) {
            let df_schema = DFSchema::try_from(self.schema.as_ref().clone())?;
            source = source.with_predicate(state.create_physical_expr(filter, &df_schema)?);
        }
        let groups = file_groups(files, state.config_options().execution.target_partitions);
        let config = FileScanConfigBuilder::new(url, Arc::new(source))
            .with_file_groups(groups)
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        // Filters prune files and row groups; DataFusion still applies them to the rows.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_spread_over_groups_by_bytes() {
        let files = [50u64, 40, 30, 20, 10]
            .iter()
            .map(|b| (PartitionedFile::new(format!("f{b}"), *b), *b))
            .collect();
        let groups = file_groups(files, 2);
        let bytes: Vec<u64> = groups
            .iter()
            .map(|g| g.files().iter().map(|f| f.object_meta.size).sum())
            .collect();
        assert_eq!(bytes, vec![80, 70]);
        assert_eq!(file_groups(vec![], 4).len(), 0);
    }
}
