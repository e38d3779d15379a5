//! Running one transform: its query streamed into the table's writer (and, with `drop`
//! expectations, the violating rows into its quarantine table's), then staged as a full
//! overwrite or as a replace of a partition range.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use futures::{StreamExt, TryStreamExt};
use iceberg::spec::DataFile;

use super::drop;
use super::logical::{logical_plan, output_columns};
use super::parse::ParsedTransform;
use super::range_filter::range_predicate;
use super::write_out::{write_result, Targets};
use crate::commit::{
    prepare_target, prepare_target_from, stage_snapshot, DesiredColumn, Evolution, JobContext,
    JobKind, PartitionRange, StagedTable, TableTarget, WriteMode,
};
use crate::error::{Error, Result};
use crate::fault::pause_point_async;
use crate::lineage::{query_lineage, record, recorded_on, renames, Recorded, LINEAGE_KEY};
use crate::spec::TransformJob;
use crate::write::Written;

/// What a run knows about a transform beyond its spec.
#[derive(Debug, Clone, Default)]
pub struct TransformFacts {
    /// Snapshot summary properties recording the input snapshots read.
    pub properties: HashMap<String, String>,
    /// Input columns this run renames: `ns.table.old` -> `ns.table.new`.
    pub renames: BTreeMap<String, String>,
    /// Rows of the inputs (their snapshots' totals): how many writers the result gets.
    pub input_rows: u64,
    /// The session is a cluster's client (`crate::cluster`): executors write the result.
    pub on_cluster: bool,
    /// The target as the run loaded it to decide the job's scope (`None`: it did not exist):
    /// the rewrite builds on it rather than loading it again (its publish still moves it only
    /// from that very version).
    pub target: Option<iceberg::table::Table>,
}

/// What one transform produced (staged, not yet published).
pub enum TransformOutcome {
    Staged {
        table: Box<StagedTable>,
        /// `<table>__quarantine`, when `drop` expectations apply.
        quarantine: Option<Box<StagedTable>>,
        /// Rows dropped, per expectation name.
        dropped: BTreeMap<String, u64>,
    },
    /// A partition range was asked for, but the table is new or its schema or partitioning
    /// changes: it must be recomputed whole.
    NeedsFullRefresh,
}

/// The queries of a recompute in batches run this many at a time: one batch sorts while another
/// writes, so both cores stay busy (a recompute in batches alone used 1.4 of 2 cores); the
/// batches are sized for it (`plan::batches`).
const QUERIES_IN_FLIGHT: usize = 2;

/// One query of a transform: a session with its inputs registered, and their rows (how many
/// writers the result gets).
pub struct Query<'a> {
    pub session: &'a SessionContext,
    pub input_rows: u64,
}

/// Runs a transform whose inputs are registered in each query's session and stages its output:
/// a full overwrite, or with `range`, a replace of exactly those partitions (the output is
/// filtered to the range, so no other partition can be touched). The queries run
/// [`QUERIES_IN_FLIGHT`] at a time and their files make one snapshot: a recompute in batches
/// (`plan::batches`) writes the union of their rows.
pub async fn run_transform(
    ctx: &JobContext,
    queries: &[Query<'_>],
    job: &TransformJob,
    parsed: &ParsedTransform,
    range: Option<&PartitionRange>,
    facts: &TransformFacts,
    progress: Arc<AtomicU64>,
) -> Result<TransformOutcome> {
    let first = queries
        .first()
        .ok_or_else(|| Error::Internal(format!("{}: no query to run", job.table)))?;
    let plan = logical_plan(first.session, job, parsed).await?;
    let columns = output_columns(job, &plan)?;
    let lineage = record(&query_lineage(&plan));
    let target = rewrite_target(ctx, job, &columns, &lineage, facts).await?;
    let mode = match range {
        None => WriteMode::Overwrite,
        Some(_) if target.reshaped => return Ok(TransformOutcome::NeedsFullRefresh),
        Some(range) => WriteMode::Replace(range.clone()),
    };
    // `drop` expectations: tagged rows go to the quarantine table, written like the table.
    let mut quarantine = None;
    if !job.drops.is_empty() {
        let q_target = quarantine_target(ctx, job, &columns).await?;
        if range.is_some() && q_target.reshaped {
            return Ok(TransformOutcome::NeedsFullRefresh);
        }
        quarantine = Some(q_target);
    }
    let targets = (&target, quarantine.as_ref());
    let writing = Writing {
        ctx,
        job,
        parsed,
        range,
        targets,
        on_cluster: facts.on_cluster,
        progress: &progress,
    };
    // Collected first: a lazy iterator's closure inside the stream would make the job's
    // future not `Send` for every lifetime (a rustc limitation).
    let writes: Vec<_> = queries
        .iter()
        .enumerate()
        .map(|(i, query)| writing.write(query, i, queries.len(), (i == 0).then_some(&plan)))
        .collect();
    let each: Vec<Written> = futures::stream::iter(writes)
        .buffer_unordered(QUERIES_IN_FLIGHT)
        .try_collect()
        .await?;
    let mut written = Written::default();
    for one in each {
        written.absorb(one);
    }
    let (files, dropped) = (written.files, written.dropped);
    let mut props = ctx.snapshot_properties(JobKind::Transform);
    props.extend(facts.properties.clone());
    props.insert(
        LINEAGE_KEY.to_string(),
        serde_json::to_string(&lineage)
            .map_err(|e| Error::Internal(format!("cannot encode column lineage: {e}")))?,
    );
    let quarantine = match quarantine {
        None => None,
        Some(q_target) => {
            let q_files = written.quarantine_files;
            Some(Box::new(
                stage_quarantine(ctx, q_target, q_files, &props, mode.clone()).await?,
            ))
        }
    };
    let staged = stage_snapshot(target, files, ctx.catalog.file_io(), props, mode).await?;
    Ok(TransformOutcome::Staged {
        table: Box::new(staged),
        quarantine,
        dropped,
    })
}

/// What every query of one transform writes with.
struct Writing<'a> {
    ctx: &'a JobContext,
    job: &'a TransformJob,
    parsed: &'a ParsedTransform,
    range: Option<&'a PartitionRange>,
    targets: (&'a TableTarget, Option<&'a TableTarget>),
    on_cluster: bool,
    progress: &'a Arc<AtomicU64>,
}

impl Writing<'_> {
    /// Plans `query`, the `i`th of `n` (unless `planned` is its plan already), filters it to
    /// the range, and runs it into the table (and the quarantine table, with `drop`
    /// expectations), in files of a prefix of its own.
    async fn write(
        &self,
        query: &Query<'_>,
        i: usize,
        n: usize,
        planned: Option<&LogicalPlan>,
    ) -> Result<Written> {
        let (ctx, job, parsed) = (self.ctx, self.job, self.parsed);
        if n > 1 {
            pause_point_async(&format!("transform-batch {} {}", job.table, i + 1)).await;
        }
        let mut plan = match planned {
            Some(plan) => plan.clone(),
            None => logical_plan(query.session, job, parsed).await?,
        };
        if let Some(range) = self.range {
            plan = filter_to_range(job, plan, range)?;
        }
        let (table, quarantine) = self.targets;
        if quarantine.is_some() {
            plan = drop::tag_violations(query.session, plan, &job.drops).await?;
        }
        let prefix = format!("{}-{}", ctx.run_id, uuid::Uuid::new_v4().simple());
        let targets = Targets {
            table,
            quarantine,
            file_io: ctx.catalog.file_io(),
            prefix: &prefix,
            run_id: &ctx.run_id,
            on_cluster: self.on_cluster,
        };
        let written = write_result(
            query.session,
            job,
            plan,
            query.input_rows,
            targets,
            self.progress.clone(),
        )
        .await?;
        if n > 1 {
            tracing::info!(table = %job.table, "batch {} of {n} written", i + 1);
        }
        Ok(written)
    }
}

/// The table of `job` prepared for a rewrite with `columns`. A column whose derivation (per
/// `lineage`) the table recorded under another name keeps its field id under its new name.
async fn rewrite_target(
    ctx: &JobContext,
    job: &TransformJob,
    columns: &[DesiredColumn],
    lineage: &BTreeMap<String, Recorded>,
    facts: &TransformFacts,
) -> Result<TableTarget> {
    // A column whose derivation the table recorded under another name is renamed in place.
    let existing = facts.target.clone();
    let renamed = existing
        .as_ref()
        .map(|t| renames(&recorded_on(t.metadata()), lineage, &facts.renames))
        .unwrap_or_default();
    job.docs
        .check_columns(&job.table, columns.iter().map(|c| c.name.as_str()))?;
    prepare_target_from(
        &ctx.catalog,
        &job.table,
        existing,
        columns,
        &job.partition_by,
        &job.docs,
        &Evolution::Rewrite { renamed },
    )
    .await
}

/// `plan` filtered to the partitions of `range` (on the source column of the job's time
/// partition), so the replace can touch no other partition.
fn filter_to_range(
    job: &TransformJob,
    plan: LogicalPlan,
    range: &PartitionRange,
) -> Result<LogicalPlan> {
    let source = job
        .time_partition()
        .map(|p| p.source.clone())
        .ok_or_else(|| Error::table_msg(&job.table, "has no time partition"))?;
    let predicate = range_predicate(plan.schema(), &source, &range.spans())?;
    Ok(datafusion::logical_expr::LogicalPlanBuilder::from(plan)
        .filter(predicate)?
        .build()?)
}

/// The quarantine table of `job` (the rows its `drop` expectations remove), prepared for a
/// rewrite with the quarantine columns of `columns`.
async fn quarantine_target(
    ctx: &JobContext,
    job: &TransformJob,
    columns: &[DesiredColumn],
) -> Result<TableTarget> {
    let q_table = job.table.quarantine();
    prepare_target(
        &ctx.catalog,
        &q_table,
        &drop::quarantine_columns(columns),
        &job.partition_by,
        &Default::default(),
        &Evolution::Rewrite {
            renamed: BTreeMap::new(),
        },
    )
    .await
}

/// The staged snapshot of the quarantine table: `props` without the column lineage (the
/// quarantine table's columns are not the query's).
async fn stage_quarantine(
    ctx: &JobContext,
    q_target: TableTarget,
    q_files: Vec<DataFile>,
    props: &HashMap<String, String>,
    mode: WriteMode,
) -> Result<StagedTable> {
    let mut q_props = props.clone();
    q_props.remove(LINEAGE_KEY);
    stage_snapshot(q_target, q_files, ctx.catalog.file_io(), q_props, mode).await
}
