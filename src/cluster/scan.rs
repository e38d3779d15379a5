//! Reading an Iceberg table on a cluster. Released Ballista knows no Iceberg, and a table
//! provider of iceberg's cannot be sent to the scheduler, so the driver plans the snapshot's
//! data files with iceberg (manifests, partition and column-bound pruning by the filter given;
//! a snapshot staged by this run as well as a published one) and registers them as a plain
//! DataFusion listing table of Parquet files with the table's Arrow schema (from its Iceberg
//! schema). The scheduler reads their footers for statistics; executors read them by column
//! name, with row-group pruning.
//!
//! That reads what Iceberg reads only when names and field ids agree and there is nothing to
//! merge: [`cluster_table`] refuses (saying why) a table with delete files, with columns
//! renamed since a file was written, or with files not on the local file system (a cluster
//! shares the warehouse as a file system mounted at the same path everywhere).

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::logical_expr::Expr;
use futures::TryStreamExt;
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::scan::FileScanTask;
use iceberg::table::Table;
use iceberg_datafusion::physical_plan::convert_filters_to_predicate;

use crate::engine::{local_url, native_path, read_by_name_refusal};
use crate::error::{Error, Result};

/// `table`'s current snapshot as a listing table of its data files (only those `filter` may
/// match, when given), spread over `partitions` file groups; or why the cluster cannot read it
/// as Iceberg would.
pub async fn cluster_table(
    table: &Table,
    filter: Option<&Expr>,
    partitions: usize,
) -> Result<std::result::Result<Arc<dyn TableProvider>, String>> {
    let metadata = table.metadata();
    let name = table.identifier().to_string();
    if let Some(why) = read_by_name_refusal(metadata) {
        return Ok(Err(why));
    }
    let mut scan = table.scan();
    if let Some(predicate) =
        filter.and_then(|f| convert_filters_to_predicate(std::slice::from_ref(f)))
    {
        scan = scan.with_filter(predicate);
    }
    let tasks: Vec<FileScanTask> = scan
        .build()
        .map_err(|e| Error::table(&name, "cannot plan its files", e))?
        .plan_files()
        .await
        .map_err(|e| Error::table(&name, "cannot plan its files", e))?
        .try_collect()
        .await
        .map_err(|e| Error::table(&name, "cannot plan its files", e))?;
    let mut paths: Vec<String> = Vec::with_capacity(tasks.len());
    for task in &tasks {
        match native_path(task) {
            Ok(path) => paths.push(format!("file:///{path}")),
            Err(why) => return Ok(Err(why)),
        }
    }
    paths.sort();
    paths.dedup();
    // No file to read: the table's metadata folder, which holds no Parquet file, keeps the
    // listing table (and its schema) and lists nothing.
    if paths.is_empty() {
        let folder = format!("{}/metadata/", metadata.location());
        let Some(folder) = local_url(&folder) else {
            return Ok(Err(format!("{folder} is not a plain local path")));
        };
        paths.push(folder);
    }
    let urls = paths
        .iter()
        .map(ListingTableUrl::parse)
        .collect::<datafusion::error::Result<Vec<_>>>()?;
    let schema = Arc::new(schema_to_arrow_schema(metadata.current_schema())?);
    let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
        .with_file_extension(".parquet")
        .with_collect_stat(true)
        .with_target_partitions(partitions.max(1));
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .with_schema(schema);
    Ok(Ok(Arc::new(ListingTable::try_new(config)?)))
}
