//! The search of an erase: every table that may hold the subject (and its quarantine table,
//! whose raw lines are read field by field as the ingest reads them) searched in parallel, one
//! task per table, and each match rewritten copy-on-write and staged unless planned only; the
//! receipt's per-table rows, files and landing sources, and what was not searched.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow::array::RecordBatch;
use futures::StreamExt;
use iceberg::arrow::schema_to_arrow_schema;

use super::raw::raw_lines;
use super::request::EraseRequest;
use super::sources::RewrittenSources;
use super::subject::subject_tables;
use crate::catalog::PipelineCatalog;
use crate::commit::ledger::LoadedFile;
use crate::dml::rewrite_rows::{compile_condition, true_rows, Edit, Rewrite, RewrittenTable};
use crate::erase::subject::condition_columns;
use crate::error::{Error, Result};
use crate::plan::Validated;
use crate::records::{EraseReceipt, ErasedSource, ErasedTable};
use crate::spec::{Pipeline, TableName};

/// What the search of every table found, and staged unless planned only.
pub(super) struct Found {
    pub receipt: EraseReceipt,
    pub without_subject: Vec<String>,
    pub staged: Vec<crate::commit::StagedTable>,
    pub sources: RewrittenSources,
}

/// Searches every table of `pipeline` that may hold the subject `request` names, in parallel,
/// and (unless planned only) stages each one's rewrite for run `run_id`.
pub(super) async fn find(
    pipeline: &Pipeline,
    validated: &Validated,
    run_id: &str,
    request: &EraseRequest,
) -> Result<Found> {
    let mut found = Found {
        receipt: EraseReceipt {
            condition: request.condition.clone(),
            ..EraseReceipt::default()
        },
        without_subject: Vec::new(),
        staged: Vec::new(),
        sources: RewrittenSources::default(),
    };
    // Tables are searched and rewritten in parallel, one per core at a time (each reads its
    // files one by one); their parts are kept in job order.
    let shared = Arc::new(pipeline.clone());
    let lanes = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut work = Vec::new();
    for subject in subject_tables(pipeline, validated, &request.condition)? {
        let Some(condition) = subject.condition else {
            found.without_subject.push(subject.table.to_string());
            continue;
        };
        let one = OneTable {
            catalog: validated.catalog.clone(),
            pipeline: shared.clone(),
            run_id: run_id.to_string(),
            table: subject.table,
            condition,
            rewrite_sources: request.rewrite_sources,
            plan_only: request.plan_only,
        };
        work.push(one);
    }
    let mut parts = futures::stream::iter(work)
        .map(|one| tokio::spawn(one.erase()))
        .buffered(lanes);
    while let Some(joined) = parts.next().await {
        let part = joined.map_err(|e| Error::Internal(format!("an erase task failed: {e}")))?;
        let mut part = part?;
        found.receipt.tables.append(&mut part.receipt.tables);
        found.receipt.sources.append(&mut part.receipt.sources);
        found
            .receipt
            .not_searched
            .append(&mut part.receipt.not_searched);
        found.staged.append(&mut part.staged);
        found
            .sources
            .pending
            .append(&mut std::mem::take(&mut part.sources.pending));
    }
    found
        .receipt
        .not_searched
        .extend(dropped_tables(&validated.catalog, pipeline).await?);
    if found.receipt.tables.is_empty() {
        return Err(Error::Usage(format!(
            "--where {}: no table of {} has the columns it names ({}); its tables: {}",
            request.condition,
            pipeline.name,
            condition_columns(&request.condition)?.join(", "),
            found.without_subject.join(", ")
        )));
    }
    Ok(found)
}

/// Tables of `pipeline` that a rollback dropped and the catalog does not list now: their files
/// are kept for that rollback's undo (see `commit::live`), and no erase searches them.
async fn dropped_tables(catalog: &PipelineCatalog, pipeline: &Pipeline) -> Result<Vec<String>> {
    let listed = catalog.list_tables().await?;
    let written = pipeline.tables_written();
    let mut out = Vec::new();
    for record in catalog.dropping_runs().await? {
        for t in &record.tables {
            let Some(table) = TableName::parse(&t.table) else {
                continue;
            };
            if t.dropped_metadata.is_some() && written.contains(&table) && !listed.contains(&table)
            {
                out.push(format!(
                    "{table}: dropped by rollback {}, its files are kept for that rollback's undo (`pipeline rollback {}`) and were not searched; `pipeline orphans --delete` removes them once a later run creates the table again",
                    record.run_id, record.run_id
                ));
            }
        }
    }
    out.dedup();
    Ok(out)
}

/// One table to erase the subject from (with its quarantine table), as a task of its own.
struct OneTable {
    catalog: Arc<PipelineCatalog>,
    pipeline: Arc<Pipeline>,
    run_id: String,
    table: TableName,
    /// The condition as it applies to this table.
    condition: String,
    rewrite_sources: bool,
    plan_only: bool,
}

impl OneTable {
    async fn erase(self) -> Result<Found> {
        let (catalog, pipeline) = (self.catalog.as_ref(), self.pipeline.as_ref());
        let (table, condition, run_id) =
            (&self.table, self.condition.as_str(), self.run_id.as_str());
        let plan_only = self.plan_only;
        let mut found = Found {
            receipt: EraseReceipt::default(),
            without_subject: Vec::new(),
            staged: Vec::new(),
            sources: RewrittenSources::default(),
        };
        if catalog.load(table).await?.is_none() {
            return Ok(found); // not created yet
        }
        let ingest = pipeline.ingests.iter().find(|i| &i.table == table);
        let mut lines: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
        let quarantine = table.quarantine();
        if catalog.load(&quarantine).await?.is_some() {
            let part = match ingest {
                Some(job) => {
                    let (part, unread) =
                        raw_lines(catalog, pipeline, job, run_id, condition, plan_only).await?;
                    found.receipt.not_searched.extend(unread);
                    part
                }
                None => {
                    rows(
                        catalog,
                        pipeline,
                        run_id,
                        &quarantine,
                        condition,
                        plan_only,
                        Vec::new(),
                    )
                    .await?
                }
            };
            merge(&mut lines, keep(&mut found, &quarantine, condition, part));
        }
        let mut ledger = Vec::new();
        if let (Some(job), true, false) = (ingest, self.rewrite_sources, plan_only) {
            // The bronze rows' lines first (a planning pass), so that the rewritten files'
            // fingerprints go into the same snapshot as the rows' removal.
            let planned = rows(
                catalog,
                pipeline,
                run_id,
                table,
                condition,
                true,
                Vec::new(),
            )
            .await?;
            merge(&mut lines, planned.sources);
            for (path, numbers) in &lines {
                ledger.push(
                    found
                        .sources
                        .rewrite(pipeline, job, path, numbers, run_id)?,
                );
            }
        }
        let part = rows(
            catalog, pipeline, run_id, table, condition, plan_only, ledger,
        )
        .await?;
        merge(&mut lines, keep(&mut found, table, condition, part));
        if ingest.is_some() {
            for (path, numbers) in lines {
                found.receipt.sources.push(ErasedSource {
                    path,
                    records: numbers.len() as u64,
                    rewritten: self.rewrite_sources && !plan_only,
                });
            }
        }
        Ok(found)
    }
}

/// Puts one table's part into the receipt (and its snapshot among the staged); returns the
/// landing files its rows came from.
fn keep(
    found: &mut Found,
    table: &TableName,
    condition: &str,
    part: RewrittenTable,
) -> BTreeMap<String, BTreeSet<u64>> {
    found.receipt.tables.push(ErasedTable {
        table: table.to_string(),
        condition: condition.to_string(),
        rows: part.rows,
        files_rewritten: part.files_rewritten,
        files_in_table: part.files_in_table,
        bytes_rewritten: part.bytes_rewritten,
        partitions: part.partitions.iter().cloned().collect(),
    });
    if let Some((staged, _)) = part.staged {
        found.staged.push(staged);
    }
    part.sources
}

fn merge(into: &mut BTreeMap<String, BTreeSet<u64>>, from: BTreeMap<String, BTreeSet<u64>>) {
    for (path, lines) in from {
        into.entry(path).or_default().extend(lines);
    }
}

/// The rows of `table` where `condition` (SQL over its columns) is true, removed.
async fn rows(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    run_id: &str,
    table: &TableName,
    condition: &str,
    plan_only: bool,
    ledger: Vec<LoadedFile>,
) -> Result<RewrittenTable> {
    let loaded = catalog.load_existing(table).await?;
    let schema = schema_to_arrow_schema(loaded.metadata().current_schema())?;
    let (columns, expr, physical) = compile_condition(&schema, condition)
        .map_err(|e| Error::table_msg(table, e.to_string()))?;
    let mut matcher = |batch: &RecordBatch| true_rows(physical.as_ref(), batch, condition);
    Rewrite {
        catalog,
        pipeline: &pipeline.name,
        run_id,
        table,
        prune: Some(expr),
        columns,
        edit: Edit::Delete,
        job: "erase",
        plan_only,
        ledger,
    }
    .stage(&mut matcher)
    .await
}
