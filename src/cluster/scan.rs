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
//! renamed since a file was written, or with files neither on S3 nor on the local file system
//! (a cluster shares a local warehouse as a file system mounted at the same path everywhere;
//! each node reaches S3 with its own credentials, `crate::catalog::NodeS3`). An empty table on
//! S3 is refused too: a listing of nothing needs a folder, and S3 folders are not listed.

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

use crate::engine::{local_url, native_path, read_by_name_refusal, remote_files, remote_scheme};
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
    let mut paths = match file_urls(metadata.location(), &tasks) {
        Ok(paths) => paths,
        Err(why) => return Ok(Err(why)),
    };
    paths.sort();
    paths.dedup();
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

/// The URLs the cluster reads `tasks`' files by, for a table at `location`: `s3://BUCKET/KEY`
/// on S3, `file:///PATH` on the local file system (the table's metadata folder when there is
/// no file, so the listing table lists nothing); or why the cluster cannot read them.
fn file_urls(location: &str, tasks: &[FileScanTask]) -> std::result::Result<Vec<String>, String> {
    if let Some(scheme) = remote_scheme(location) {
        if tasks.is_empty() {
            // A listing of nothing needs a folder to list, and S3 folders are not listed.
            return Err(format!("{location} has no data file to read"));
        }
        return remote_files(scheme, tasks)
            .map(|paths| paths.iter().map(|p| format!("{scheme}://{p}")).collect())
            .ok_or_else(|| {
                format!(
                    "{location}: a file has deletes to apply, is not Parquet or not a plain path"
                )
            });
    }
    if tasks.is_empty() {
        let folder = format!("{location}/metadata/");
        return local_url(&folder)
            .map(|url| vec![url])
            .ok_or_else(|| format!("{folder} is not a plain local path"));
    }
    tasks
        .iter()
        .map(|task| native_path(task).map(|path| format!("file:///{path}")))
        .collect()
}
