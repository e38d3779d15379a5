//! Reading an Iceberg table with DataFusion's own Parquet source. iceberg-datafusion's scan is
//! one DataFusion partition decoded by iceberg's Arrow reader, so a scan uses one core however
//! many there are. [`table_provider`] plans the snapshot's data files with iceberg (manifests,
//! partition and column-bound pruning) and hands them to DataFusion's Parquet source in one
//! file group per target partition: decoding in parallel, with row-group and page pruning.
//!
//! DataFusion maps a file's columns to the table by name, Iceberg by field id. The two agree
//! when no column of the table was ever renamed, or dropped and added again under its old name,
//! and the columns are primitive: only then is this path taken. A scan whose files carry delete
//! files, files that are not local, a path the object store would have to escape, or a file
//! missing or of another size than its metadata records (one `stat` each), is read by
//! iceberg-datafusion's provider, as before.

use std::any::Any;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
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
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::ExecutionPlan;
use futures::TryStreamExt;
use iceberg::scan::FileScanTask;
use iceberg::spec::{DataFileFormat, TableMetadata};
use iceberg::table::Table;
use iceberg_datafusion::physical_plan::convert_filters_to_predicate;
use iceberg_datafusion::IcebergStaticTableProvider;

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
    if !local(table.metadata().location()) || !columns_match_by_name(table.metadata()) {
        return Ok(Arc::new(fallback));
    }
    Ok(Arc::new(NativeParquetTable {
        schema: fallback.schema(),
        fallback,
        table,
        snapshot_id,
    }))
}

/// Whether `location` is on the local file system (a plain absolute path or a `file:` URL).
fn local(location: &str) -> bool {
    location.starts_with('/') || location.starts_with("file:")
}

/// The path of a local file as the local object store names it, or `None` when the store
/// would have to escape a character of it (then the file is read through iceberg).
fn object_store_path(location: &str) -> Option<String> {
    let path = location
        .strip_prefix("file://")
        .or_else(|| location.strip_prefix("file:"))
        .unwrap_or(location);
    let plain = path.starts_with('/')
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-=+".contains(&b));
    plain.then(|| path.trim_start_matches('/').to_string())
}

/// Whether reading the table's files by column name reads what reading by field id would:
/// every column primitive, and in every schema the table ever had, each field id with the
/// name the current schema gives it and each current name with the same id.
fn columns_match_by_name(metadata: &TableMetadata) -> bool {
    let current = metadata.current_schema();
    let primitive = current
        .as_struct()
        .fields()
        .iter()
        .all(|f| f.field_type.is_primitive());
    primitive
        && metadata.schemas_iter().all(|schema| {
            schema.field_id_to_name_map().iter().all(|(id, name)| {
                current.name_by_field_id(*id).is_none_or(|n| n == name)
                    && current.field_id_by_name(name).is_none_or(|i| i == *id)
            })
        })
}

/// `location` (a local path or `file:` URL) as a `file:///` URL, when it is a plain path on
/// the local file system (no character the object store would have to escape).
pub fn local_url(location: &str) -> Option<String> {
    object_store_path(location).map(|p| format!("file:///{p}"))
}

/// Why DataFusion's Parquet reader, matching columns by name, cannot read `metadata`'s files
/// as Iceberg (by field id) would; `None` when it can.
pub fn read_by_name_refusal(metadata: &TableMetadata) -> Option<String> {
    (!columns_match_by_name(metadata)).then(|| {
        "its columns were renamed, or dropped and added again, since some of its files were written (or it has nested columns): those files are read by field id".to_string()
    })
}

/// The object store path (relative to the local file system's root) of a planned task's file
/// when DataFusion's Parquet reader reads it exactly as Iceberg would; otherwise why not:
/// delete files to apply, a file elsewhere than on the local file system or not Parquet, or a
/// file missing or not of the size the metadata records (one `stat`).
pub fn native_path(task: &FileScanTask) -> Result<String, String> {
    let file = &task.data_file_path;
    if !task.deletes.is_empty() {
        return Err(format!("{file} has delete files to apply"));
    }
    if task.data_file_format != DataFileFormat::Parquet {
        return Err(format!("{file} is not Parquet"));
    }
    let path = object_store_path(file)
        .ok_or_else(|| format!("{file} is not a plain path on the local file system"))?;
    match std::fs::metadata(format!("/{path}")) {
        Ok(m) if m.len() == task.file_size_in_bytes => Ok(path),
        Ok(m) => Err(format!(
            "{file} has {} bytes, its metadata says {}",
            m.len(),
            task.file_size_in_bytes
        )),
        Err(e) => Err(format!("{file}: {e}")),
    }
}

#[derive(Debug)]
struct NativeParquetTable {
    schema: SchemaRef,
    fallback: IcebergStaticTableProvider,
    table: Table,
    snapshot_id: Option<i64>,
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
        let mut files = Vec::with_capacity(tasks.len());
        for task in &tasks {
            // Iceberg reads what DataFusion cannot read as it would (its errors name the file
            // and what is wrong with it).
            let Ok(path) = native_path(task) else {
                return self.fallback.scan(state, projection, filters, limit).await;
            };
            let whole = task.start == 0 && task.length == task.file_size_in_bytes;
            let file = if whole {
                PartitionedFile::new(path, task.file_size_in_bytes)
            } else {
                PartitionedFile::new_with_range(
                    path,
                    task.file_size_in_bytes,
                    task.start as i64,
                    (task.start + task.length) as i64,
                )
            };
            files.push((file, task.length));
        }
        if files.is_empty() {
            let schema = match projection {
                Some(p) => Arc::new(self.schema.project(p)?),
                None => self.schema.clone(),
            };
            return Ok(Arc::new(EmptyExec::new(schema)));
        }
        // Strings stay `Utf8` (the table's type) instead of being read as views and cast back.
        let mut options = TableParquetOptions {
            global: state.config_options().execution.parquet.clone(),
            ..TableParquetOptions::default()
        };
        options.global.schema_force_view_types = false;
        let mut source =
            ParquetSource::new(self.schema.clone()).with_table_parquet_options(options);
        if let Some(filter) = conjunction(filters.to_vec()) {
            let df_schema = DFSchema::try_from(self.schema.as_ref().clone())?;
            source = source.with_predicate(state.create_physical_expr(filter, &df_schema)?);
        }
        let groups = file_groups(files, state.config_options().execution.target_partitions);
        let config =
            FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), Arc::new(source))
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
    fn local_paths_map_to_the_object_store_and_odd_ones_do_not() {
        assert_eq!(
            object_store_path("/tmp/w/t/data/m=671/a-1.parquet").as_deref(),
            Some("tmp/w/t/data/m=671/a-1.parquet")
        );
        assert_eq!(
            object_store_path("file:///tmp/w/a.parquet").as_deref(),
            Some("tmp/w/a.parquet")
        );
        assert_eq!(object_store_path("/tmp/with space/a.parquet"), None);
        assert_eq!(object_store_path("s3://bucket/a.parquet"), None);
    }

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
