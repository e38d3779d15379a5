//! Rewriting the groups a compaction plan selected: each group's files are read through
//! iceberg's Arrow reader (so files written under older schemas come out in the current one)
//! and streamed into a table writer that rolls files at the target size. Nothing is staged
//! unless every group wrote back exactly the rows its files hold, in the same partition.

use std::collections::{BTreeSet, HashMap};

use futures::{StreamExt, TryStreamExt};
use iceberg::arrow::ArrowReaderBuilder;
use iceberg::scan::FileScanTask;
use iceberg::spec::DataFile;
use iceberg::table::Table;

use super::select::{CompactionPlan, Group};
use crate::commit::{stage_snapshot, StagedTable, TableTarget, WriteMode};
use crate::error::{Error, Result};
use crate::spec::TableName;
use crate::write::TableWriter;

/// A compaction staged on a table (not yet published).
pub struct Compacted {
    pub staged: StagedTable,
    pub files_in: u64,
    pub files_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub rows: u64,
}

/// Rewrites the groups of `plan` (made on `table`'s current snapshot) into files of `target`
/// bytes named with `prefix`, and stages the `replace` snapshot that swaps them in, with the
/// summary `properties`. `None` when the plan has nothing to compact.
pub async fn compact(
    name: &TableName,
    table: &Table,
    plan: &CompactionPlan,
    target: usize,
    prefix: &str,
    properties: HashMap<String, String>,
) -> Result<Option<Compacted>> {
    if plan.groups.is_empty() {
        return Ok(None);
    }
    let metadata = table.metadata();
    if metadata.current_snapshot_id() != plan.snapshot {
        return Err(Error::Internal(format!(
            "{name}: the compaction was planned on another snapshot"
        )));
    }
    let wanted: BTreeSet<&str> = plan
        .groups
        .iter()
        .flat_map(|g| g.files.iter().map(String::as_str))
        .collect();
    let mut tasks = planned_tasks(table, &wanted).await?;
    let rewriter = GroupRewriter {
        name,
        table,
        target,
        prefix,
    };
    let mut new_files = Vec::new();
    let (mut files_in, mut files_out, mut bytes_in, mut bytes_out, mut total_rows) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    for group in &plan.groups {
        let group_tasks = rewriter.take_tasks(group, &mut tasks)?;
        let (rows, files) = rewriter.rewrite(group, group_tasks).await?;
        tracing::debug!(table = %name, partition = %group.partition, files_in = group.files.len(), files_out = files.len(), "compacted");
        files_in += group.files.len() as u64;
        bytes_in += group.bytes;
        total_rows += rows;
        files_out += files.len() as u64;
        bytes_out += files.iter().map(|f| f.file_size_in_bytes()).sum::<u64>();
        new_files.extend(files);
    }
    let removed: BTreeSet<String> = wanted.iter().map(|p| p.to_string()).collect();
    let target = TableTarget::unchanged(name, metadata, table.metadata_location_result()?)?;
    let staged = stage_snapshot(
        target,
        new_files,
        table.file_io(),
        properties,
        WriteMode::Compact(removed),
    )
    .await?;
    Ok(Some(Compacted {
        staged,
        files_in,
        files_out,
        bytes_in,
        bytes_out,
        rows: total_rows,
    }))
}

/// The scan tasks of the current snapshot's files whose paths are `wanted`, by path.
async fn planned_tasks(
    table: &Table,
    wanted: &BTreeSet<&str>,
) -> Result<HashMap<String, FileScanTask>> {
    Ok(table
        .scan()
        .select_all()
        .build()?
        .plan_files()
        .await?
        .try_filter(|t| futures::future::ready(wanted.contains(t.data_file_path())))
        .map_ok(|t| (t.data_file_path().to_string(), t))
        .try_collect()
        .await?)
}

/// Rewrites one group at a time into `table`'s files of `target` bytes named with `prefix`.
struct GroupRewriter<'a> {
    name: &'a TableName,
    table: &'a Table,
    target: usize,
    prefix: &'a str,
}

impl GroupRewriter<'_> {
    /// The tasks of `group`'s files, in its order, taken out of `tasks`; an error if a file is
    /// not in the current snapshot or has delete files.
    fn take_tasks(
        &self,
        group: &Group,
        tasks: &mut HashMap<String, FileScanTask>,
    ) -> Result<Vec<FileScanTask>> {
        let name = self.name;
        let mut group_tasks = Vec::with_capacity(group.files.len());
        for path in &group.files {
            let task = tasks.remove(path).ok_or_else(|| {
                Error::Internal(format!("{name}: {path} is not in the current snapshot"))
            })?;
            if !task.deletes.is_empty() {
                return Err(Error::table_msg(
                    name,
                    format!("{path} has delete files; compact it with the engine that wrote them"),
                ));
            }
            group_tasks.push(task);
        }
        Ok(group_tasks)
    }

    /// The rows read and the files written by streaming `group_tasks` (the files of `group`)
    /// into new files; an error, with nothing staged, unless exactly the group's rows came
    /// back, all in its partition.
    async fn rewrite(
        &self,
        group: &Group,
        group_tasks: Vec<FileScanTask>,
    ) -> Result<(u64, Vec<DataFile>)> {
        let name = self.name;
        let file_io = self.table.file_io();
        let metadata = self.table.metadata();
        let mut writer = TableWriter::new(
            &name.to_string(),
            metadata,
            file_io.clone(),
            self.target,
            self.prefix,
        )
        .await?;
        let reader = ArrowReaderBuilder::new(file_io.clone(), iceberg::Runtime::try_current()?)
            .with_data_file_concurrency_limit(2)
            .build();
        let mut batches = reader
            .read(futures::stream::iter(group_tasks.into_iter().map(Ok)).boxed())?
            .stream();
        while let Some(batch) = batches.try_next().await? {
            writer.write(batch).await?;
        }
        let rows = writer.rows();
        let files = writer.close().await?;
        if rows != group.records {
            return Err(Error::table_msg(
                name,
                format!(
                    "compacting partition {} read {rows} rows, its files hold {}; nothing was changed",
                    show(&group.partition),
                    group.records
                ),
            ));
        }
        if let Some(f) = files.iter().find(|f| *f.partition() != group.key) {
            return Err(Error::table_msg(
                name,
                format!(
                    "compacting partition {} wrote a file of another partition ({}); nothing was changed",
                    show(&group.partition),
                    f.file_path()
                ),
            ));
        }
        Ok((rows, files))
    }
}

fn show(partition: &str) -> &str {
    if partition.is_empty() {
        "(unpartitioned)"
    } else {
        partition
    }
}
