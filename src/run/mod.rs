//! One run of a pipeline, end to end: validate, run every job in dependency order (independent
//! jobs concurrently), stage each output, then publish every table at once.
//!
//! Guarantee: either every table of the run moves to its new snapshot in one catalog
//! transaction, or (on any error, in any job) none does. Data files written by a failed run
//! are never referenced by any table.

mod backfill_plan;
mod lock;
mod rebase;
mod rollback;
mod scope;
mod validate;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use iceberg_datafusion::IcebergStaticTableProvider;
use serde::Serialize;
use tokio::task::JoinSet;

pub use backfill_plan::{plan_backfill, PlannedInput, PlannedTable};
pub use lock::{lock_path, LockWait};
pub use rollback::rollback;
pub use scope::{decide, Forced, Scope};
pub use validate::{validate, Validated};

use crate::catalog::{Publication, PublishOutcome, RunRecord, TableRecord};
use crate::commit::StagedTable;
use crate::context::{new_run_id, JobContext};
use crate::error::{Error, Result};
use crate::ingest::{run_ingest, FileStats};
use crate::plan::JobId;
use crate::spec::{Pipeline, TableName};
use crate::transform::{
    new_session, range_predicate, register_table, run_transform, CountedTable, TransformFacts,
    TransformOutcome,
};

/// What one job did.
#[derive(Debug, Clone, Serialize)]
pub struct JobReport {
    /// `ingest` or `transform`.
    pub job: String,
    pub table: String,
    /// Source records (ingest) or rows of the input tables (transform).
    pub rows_in: u64,
    pub rows_out: u64,
    pub quarantined: u64,
    /// Data files written.
    pub files: u64,
    pub bytes: u64,
    /// The table's snapshot after the run (unchanged when the job had nothing new).
    pub snapshot_id: i64,
    /// Source files skipped because the table already loaded them (ingest only).
    pub already_loaded: usize,
    /// What the job did to its table: `append`, `nothing new`, `up to date`,
    /// `full refresh (why)` or `replace <partitions>`.
    pub action: String,
    pub seconds: f64,
    /// Per source file counts (ingest only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<FileStats>,
}

/// What a run did.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub pipeline: String,
    pub started_at: String,
    pub seconds: f64,
    /// Every table of the run was published in one catalog transaction.
    pub published: bool,
    /// The tables published (job outputs and quarantine tables), sorted.
    pub tables: Vec<String>,
    pub jobs: Vec<JobReport>,
    /// The expectations evaluated on this run's tables.
    pub quality: Vec<crate::quality::QualityResult>,
}

/// Receives progress while a run works.
pub trait Observer: Send + Sync {
    fn job_started(&self, _job: &str, _table: &TableName) {}
    fn job_progress(&self, _table: &TableName, _rows: u64, _seconds: f64) {}
    fn job_finished(&self, _report: &JobReport) {}
    fn publishing(&self, _tables: usize) {}
    /// Another writer moved `table` since this run read it; the run's snapshot is being
    /// produced again on top of it (attempt `attempt`).
    fn rebasing(&self, _table: &TableName, _attempt: u32) {}
    /// Another run of the pipeline holds the lock; this run waits for it.
    fn waiting_for(&self, _holder: &str) {}
    /// A publish an earlier command left half done was completed or undone first.
    fn recovered(&self, _what: &str) {}
    /// An expectation was evaluated on a staged table.
    fn checked(&self, _result: &crate::quality::QualityResult) {}
}

/// An observer that shows nothing.
pub struct Silent;
impl Observer for Silent {}

/// How a run chooses what to recompute.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How long to wait for another run of the pipeline; `None` fails at once.
    pub wait: LockWait,
    /// Recompute every transform whole, whatever changed.
    pub full_refresh: bool,
    /// Load again source files whose content changed since they were loaded, replacing their
    /// old rows (instead of failing).
    pub reload_changed: bool,
    /// Set for a backfill: no ingest job runs, and only the selected tables (and what is
    /// downstream of them) are recomputed.
    pub backfill: Option<Backfill>,
    /// Who runs it and why, for the run record.
    pub invocation: crate::receipt::Invocation,
}

impl RunOptions {
    /// A normal run that waits up to `wait` for the pipeline's lock.
    pub fn new(wait: LockWait) -> RunOptions {
        RunOptions {
            wait,
            full_refresh: false,
            reload_changed: false,
            backfill: None,
            invocation: crate::receipt::Invocation::current(None, None),
        }
    }
}

/// The tables a backfill recomputes, and the time range (inclusive instants, microseconds since
/// the epoch) whose partitions it replaces in each.
#[derive(Debug, Clone)]
pub struct Backfill {
    pub tables: Vec<TableName>,
    pub from: i64,
    pub to: i64,
}

/// Jobs in progress: start time and rows so far.
type RunningJobs = HashMap<TableName, (Instant, Arc<AtomicU64>)>;

/// A transform that staged its table.
struct TransformDone {
    table: Box<StagedTable>,
    /// Its quarantine table, when `drop` expectations apply.
    quarantine: Option<Box<StagedTable>>,
    /// Rows dropped, per expectation name.
    dropped: std::collections::BTreeMap<String, u64>,
    rows_in: u64,
    action: String,
}

enum Outcome {
    Ingest(Box<crate::ingest::IngestOutcome>),
    Transform(Box<TransformDone>),
    /// A transform with nothing to do: its table and current snapshot.
    Unchanged(TableName, Option<i64>, String),
}

/// Runs the whole pipeline and publishes its tables atomically.
///
/// Runs of the same pipeline on the same catalog are serialized: a second run waits for the
/// first (up to `wait`), or fails at once when `wait` is `LockWait(None)`.
pub async fn run_pipeline(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    options: RunOptions,
) -> Result<RunReport> {
    let wait = options.wait;
    let clock = Instant::now();
    let mut validated = validate(pipeline).await?;
    tracing::debug!(ms = clock.elapsed().as_millis() as u64, "validated");
    let database = validated.catalog.lock_anchor()?;
    let (name, waiter) = (pipeline.name.clone(), observer.clone());
    let lock = tokio::task::spawn_blocking(move || {
        lock::acquire(&database, &name, wait, |holder| waiter.waiting_for(holder))
    })
    .await
    .map_err(|e| Error::Usage(format!("lock task failed: {e}")))??;
    let recovered = validated.catalog.recover().await?;
    if let Some(r) = &recovered {
        observer.recovered(&r.to_string());
    }
    if lock.waited || recovered.is_some() {
        // Tables moved while this run waited: read them again.
        validated = validate(pipeline).await?;
    }
    let started = Instant::now();
    let started_at = chrono::Utc::now();
    let run_id = new_run_id(started_at);
    let ctx = Arc::new(JobContext {
        catalog: validated.catalog.clone(),
        project_dir: pipeline.project_dir.clone(),
        pipeline: pipeline.name.clone(),
        run_id: run_id.clone(),
        started_at_micros: started_at.timestamp_micros(),
        reload_changed: options.reload_changed,
    });
    let pipeline = Arc::new(pipeline.clone());
    let parsed = Arc::new(validated.plan.transforms.clone());
    let external = Arc::new(validated.external);
    let staged: Arc<Mutex<HashMap<TableName, StagedTable>>> = Default::default();
    let running: Arc<Mutex<RunningJobs>> = Default::default();
    let options = Arc::new(options);
    let in_scope = jobs_in_scope(&validated.plan, &pipeline, &options)?;

    let ticker = {
        let running = running.clone();
        let observer = observer.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(std::time::Duration::from_secs(2));
            interval.tick().await;
            loop {
                interval.tick().await;
                let snapshot: Vec<_> = running
                    .lock()
                    .map(|r| {
                        r.iter()
                            .map(|(t, (s, c))| {
                                (
                                    t.clone(),
                                    c.load(Ordering::Relaxed),
                                    s.elapsed().as_secs_f64(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                for (t, rows, secs) in snapshot {
                    observer.job_progress(&t, rows, secs);
                }
            }
        })
    };

    let mut done: HashSet<JobId> = HashSet::new();
    let mut started_jobs: HashSet<JobId> = HashSet::new();
    let mut tasks: JoinSet<(JobId, f64, Result<Outcome>)> = JoinSet::new();
    let mut reports = Vec::new();
    // Rows each transform's `drop` expectations removed, by table and expectation.
    let mut dropped: HashMap<TableName, std::collections::BTreeMap<String, u64>> = HashMap::new();
    let order = validated.plan.order.clone();
    let plan = Arc::new(validated.plan);
    let result: Result<()> = async {
        loop {
            for job in &order {
                if started_jobs.contains(job)
                    || !plan.dependencies(*job).iter().all(|d| done.contains(d))
                {
                    continue;
                }
                if !in_scope.contains(job) {
                    started_jobs.insert(*job);
                    done.insert(*job);
                    continue;
                }
                started_jobs.insert(*job);
                let counter = Arc::new(AtomicU64::new(0));
                let (kind, table) = match *job {
                    JobId::Ingest(i) => ("ingest", pipeline.ingests[i].table.clone()),
                    JobId::Transform(i) => ("transform", pipeline.transforms[i].table.clone()),
                };
                observer.job_started(kind, &table);
                running
                    .lock()
                    .expect("progress lock")
                    .insert(table, (Instant::now(), counter.clone()));
                let (ctx, pipeline, parsed, external, staged, options) = (
                    ctx.clone(),
                    pipeline.clone(),
                    parsed.clone(),
                    external.clone(),
                    staged.clone(),
                    options.clone(),
                );
                let job = *job;
                tasks.spawn(async move {
                    let t0 = Instant::now();
                    let result = match job {
                        JobId::Ingest(i) => run_ingest(&ctx, &pipeline.ingests[i], counter)
                            .await
                            .map(|o| Outcome::Ingest(Box::new(o))),
                        JobId::Transform(i) => {
                            let t = &pipeline.transforms[i];
                            let job = TransformRun {
                                ctx: &ctx,
                                job: t,
                                parsed: &parsed[i],
                                external: &external,
                                staged: &staged,
                                options: &options,
                            };
                            job.run(counter).await
                        }
                    };
                    (job, t0.elapsed().as_secs_f64(), result)
                });
            }
            let Some(joined) = tasks.join_next().await else {
                break;
            };
            let (job, seconds, outcome) =
                joined.map_err(|e| Error::Usage(format!("a job panicked: {e}")))?;
            let report = match outcome? {
                Outcome::Ingest(o) => {
                    let new = o.staged.as_ref();
                    let report = JobReport {
                        job: "ingest".into(),
                        table: o.table.to_string(),
                        rows_in: o.records(),
                        rows_out: new.map_or(0, |s| s.added_rows - o.rewritten_rows),
                        quarantined: o.quarantined(),
                        files: new.map_or(0, |s| s.added_files),
                        bytes: new.map_or(0, |s| s.added_bytes),
                        snapshot_id: new
                            .map(|s| s.snapshot_id)
                            .or(o.current_snapshot)
                            .unwrap_or_default(),
                        already_loaded: o.already_loaded,
                        action: {
                            let action = match (new.is_some(), o.reloaded) {
                                (false, _) => "nothing new".to_string(),
                                (true, 0) => "append".into(),
                                (true, n) => format!(
                                    "append; {n} changed file(s) reloaded, {} old rows replaced",
                                    o.replaced_rows
                                ),
                            };
                            if o.added_columns.is_empty() {
                                action
                            } else {
                                format!("{action}; columns added: {}", o.added_columns.join(", "))
                            }
                        },
                        seconds,
                        sources: o.files.clone(),
                    };
                    let mut s = staged.lock().expect("staged lock");
                    if let Some(q) = o.quarantine {
                        s.insert(q.table.clone(), q);
                    }
                    if let Some(new) = o.staged {
                        s.insert(new.table.clone(), new);
                    }
                    report
                }
                Outcome::Unchanged(table, snapshot, action) => JobReport {
                    job: "transform".into(),
                    table: table.to_string(),
                    rows_in: 0,
                    rows_out: 0,
                    quarantined: 0,
                    already_loaded: 0,
                    action,
                    files: 0,
                    bytes: 0,
                    snapshot_id: snapshot.unwrap_or_default(),
                    seconds,
                    sources: Vec::new(),
                },
                Outcome::Transform(done) => {
                    let TransformDone {
                        table: st,
                        quarantine,
                        dropped: counts,
                        rows_in,
                        action,
                    } = *done;
                    let report = JobReport {
                        job: "transform".into(),
                        table: st.table.to_string(),
                        rows_in,
                        rows_out: st.added_rows,
                        quarantined: counts.values().sum(),
                        already_loaded: 0,
                        action,
                        files: st.added_files,
                        bytes: st.added_bytes,
                        snapshot_id: st.snapshot_id,
                        seconds,
                        sources: Vec::new(),
                    };
                    dropped.insert(st.table.clone(), counts);
                    let mut s = staged.lock().expect("staged lock");
                    if let Some(q) = quarantine {
                        s.insert(q.table.clone(), *q);
                    }
                    s.insert(st.table.clone(), *st);
                    report
                }
            };
            if let Some(name) = TableName::parse(&report.table) {
                running.lock().expect("progress lock").remove(&name);
            }
            observer.job_finished(&report);
            reports.push(report);
            done.insert(job);
        }
        Ok(())
    }
    .await;
    ticker.abort();
    if let Err(e) = result {
        tasks.abort_all();
        return Err(e);
    }

    // Publish every staged table in one catalog transaction.
    tracing::debug!(ms = clock.elapsed().as_millis() as u64, "every job staged");
    crate::fault::pause_point("staged");
    let staged = std::mem::take(&mut *staged.lock().expect("staged lock"));
    observer.publishing(staged.len());
    let mut names: Vec<_> = staged.keys().cloned().collect();
    names.sort();
    let tables = names.iter().map(|t| t.to_string()).collect();
    let mut staged: Vec<StagedTable> = {
        let mut staged = staged;
        names
            .iter()
            .map(|n| staged.remove(n).expect("staged table"))
            .collect()
    };
    // Audit: the expectations on the staged tables, before anything is published.
    let anomalies = pipeline.expectations.iter().any(|e| {
        matches!(
            e.check,
            crate::spec::Check::Volume { .. } | crate::spec::Check::NullRate { .. }
        )
    });
    let baselines = if anomalies {
        crate::quality::Baselines::from_records(&validated.catalog.runs().await?, &pipeline.name)
    } else {
        crate::quality::Baselines::default()
    };
    let lineage =
        crate::lineage::pipeline_lineage(&pipeline, &validated.ingests, &validated.lineage);
    let bronze = pipeline.ingests.iter().map(|j| j.table.clone()).collect();
    let quality = crate::quality::audit(
        &pipeline.expectations,
        &staged,
        &crate::quality::AuditContext {
            catalog: &validated.catalog,
            started_micros: started_at.timestamp_micros(),
            run_id: &run_id,
            baselines: &baselines,
            lineage: &lineage,
            bronze: &bronze,
        },
    )
    .await?;
    let mut quality = quality;
    for e in &pipeline.expectations {
        if e.action != crate::spec::ExpectAction::Drop {
            continue;
        }
        if let Some(counts) = dropped.get(&e.table) {
            let n = counts.get(&e.name).copied().unwrap_or(0);
            quality.push(crate::quality::dropped_result(e, n, &e.table.quarantine()));
        }
    }
    for result in &quality {
        observer.checked(result);
    }
    if let Some(failure) = crate::quality::first_failure(&quality) {
        return Err(failure);
    }
    let kind = if options.backfill.is_some() {
        "backfill"
    } else {
        "run"
    };
    // Optimistic concurrency: another writer (another pipeline, another tool) may have moved
    // a table since this run read it. Rebase what can be rebased and try again, a few times.
    const ATTEMPTS: u32 = 5;
    for attempt in 1..=ATTEMPTS {
        let mut publication = Publication::default();
        let mut record = RunRecord {
            run_id: run_id.clone(),
            pipeline: pipeline.name.clone(),
            kind: kind.into(),
            started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            finished_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            rolls_back: None,
            quality: quality.clone(),
            undo: options.invocation.undo_command(&run_id, &pipeline.name),
            invocation: options.invocation.clone(),
            tables: Vec::new(),
        };
        if let Some(keep) = pipeline.max_snapshots {
            for table in staged.iter_mut() {
                crate::commit::expire_snapshots(table, keep, validated.catalog.file_io()).await?;
            }
        }
        for table in &staged {
            record.tables.push(TableRecord {
                table: table.table.to_string(),
                operation: table.mode.name().into(),
                partitions: match &table.mode {
                    crate::commit::WriteMode::Replace(r) => Some(r.to_string()),
                    _ => None,
                },
                snapshot_before: table.metadata.current_snapshot_id(),
                snapshot_after: Some(table.snapshot_id),
                rows: total_records(table.metadata.snapshot_by_id(table.snapshot_id)),
            });
            publication.changes.push(table.clone().into_change()?);
        }
        publication.record = Some(record);
        let conflicts = match validated.catalog.try_publish(&publication).await? {
            PublishOutcome::Published(_) => break,
            PublishOutcome::Conflicts(conflicts) => conflicts,
        };
        if attempt == ATTEMPTS {
            return Err(Error::Conflict {
                table: staged[conflicts[0]].table.to_string(),
                message: format!(
                    "other writers kept committing to it; gave up after {ATTEMPTS} attempts"
                ),
            });
        }
        for i in conflicts {
            tracing::info!(table = %staged[i].table, attempt, "another writer moved the table; rebasing");
            observer.rebasing(&staged[i].table, attempt);
            staged[i] = rebase::rebase(&validated.catalog, &staged[i]).await?;
        }
        let backoff = 50u64 << attempt;
        let jitter = uuid::Uuid::new_v4().as_u128() as u64 % backoff;
        tokio::time::sleep(std::time::Duration::from_millis(backoff + jitter)).await;
    }
    tracing::debug!(ms = clock.elapsed().as_millis() as u64, "published");
    drop(lock);

    Ok(RunReport {
        run_id,
        pipeline: pipeline.name.clone(),
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        seconds: started.elapsed().as_secs_f64(),
        published: true,
        tables,
        jobs: reports,
        quality,
    })
}

/// The jobs a run executes: every job, or for a backfill the selected tables' transforms and
/// every transform downstream of them (no ingest).
fn jobs_in_scope(
    plan: &crate::plan::Plan,
    pipeline: &Pipeline,
    options: &RunOptions,
) -> Result<HashSet<JobId>> {
    let Some(backfill) = &options.backfill else {
        return Ok(plan.order.iter().copied().collect());
    };
    let mut selected: HashSet<JobId> = HashSet::new();
    for table in &backfill.tables {
        let i = pipeline
            .transforms
            .iter()
            .position(|t| &t.table == table)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--tables: `{table}` is not a transform of pipeline `{}`",
                    pipeline.name
                ))
            })?;
        selected.insert(JobId::Transform(i));
    }
    // Downstream closure, in dependency order.
    for job in &plan.order {
        if plan.dependencies(*job).iter().any(|d| selected.contains(d)) {
            selected.insert(*job);
        }
    }
    Ok(selected)
}

/// One transform job of a run, with what it needs to read its inputs.
struct TransformRun<'a> {
    ctx: &'a JobContext,
    job: &'a crate::spec::TransformJob,
    parsed: &'a crate::transform::ParsedTransform,
    external: &'a HashMap<TableName, iceberg::table::Table>,
    staged: &'a Mutex<HashMap<TableName, StagedTable>>,
    options: &'a RunOptions,
}

impl TransformRun<'_> {
    /// Decides the job's scope (see [`scope`]) and runs it.
    async fn run(&self, counter: Arc<AtomicU64>) -> Result<Outcome> {
        let (ctx, job) = (self.ctx, self.job);
        let mut inputs = Vec::new();
        for input in &self.parsed.inputs {
            let staged_input = self.staged.lock().expect("staged lock").get(input).cloned();
            let table = match staged_input {
                Some(s) => s.reader(ctx.catalog.file_io())?,
                // External, or produced by this pipeline but unchanged in this run.
                None => match self.external.get(input) {
                    Some(t) => t.clone(),
                    None => ctx.catalog.load_existing(input).await?,
                },
            };
            inputs.push((input.clone(), table));
        }
        let current = ctx.catalog.load(&job.table).await?;
        let forced = self.options.backfill.as_ref().and_then(|b| {
            b.tables.contains(&job.table).then_some(Forced {
                from: b.from,
                to: b.to,
            })
        });
        let mut scope = decide(
            job,
            current.as_ref().map(|t| t.metadata()),
            &inputs,
            forced,
            self.options.full_refresh,
        )
        .await?;
        if scope == Scope::UpToDate {
            let snapshot = current.and_then(|t| t.metadata().current_snapshot_id());
            return Ok(Outcome::Unchanged(
                job.table.clone(),
                snapshot,
                scope.describe(),
            ));
        }
        let mut facts = TransformFacts {
            properties: scope::scope_properties(job, &inputs).into_iter().collect(),
            ..TransformFacts::default()
        };
        // Input columns this run renames (a staged input's snapshot against its parent).
        for (name, table) in &inputs {
            if self.staged.lock().expect("staged lock").contains_key(name) {
                facts
                    .renames
                    .extend(crate::lineage::snapshot_renames(name, table.metadata()));
            }
        }
        loop {
            let range = match &scope {
                Scope::Range(r) => Some(r),
                _ => None,
            };
            let session = new_session();
            let mut rows_in = 0u64;
            for (name, table) in &inputs {
                let rows = total_records(table.metadata().current_snapshot());
                rows_in += rows;
                let provider: Arc<dyn datafusion::catalog::TableProvider> = Arc::new(
                    IcebergStaticTableProvider::try_new_from_table(table.clone())
                        .await
                        .map_err(|e| Error::table(name, "cannot read table", e))?,
                );
                // Inputs declared in incremental_by are read for the range only.
                let provider = match (range, job.range_column(name)) {
                    (Some(range), Some(column)) => {
                        let df = session.read_table(provider)?;
                        let predicate = range_predicate(df.schema(), column, &range.spans())?;
                        df.filter(predicate)?.into_view()
                    }
                    _ => provider,
                };
                register_table(&session, name, Arc::new(CountedTable::new(provider, rows)))?;
            }
            let outcome = run_transform(
                ctx,
                &session,
                job,
                self.parsed,
                range,
                &facts,
                counter.clone(),
            )
            .await?;
            match outcome {
                TransformOutcome::Staged {
                    table,
                    quarantine,
                    dropped,
                } => {
                    return Ok(Outcome::Transform(Box::new(TransformDone {
                        table,
                        quarantine,
                        dropped,
                        rows_in,
                        action: scope.describe(),
                    })))
                }
                TransformOutcome::NeedsFullRefresh => {
                    scope = Scope::Full("the table is new or its schema changes".into());
                }
            }
        }
    }
}

/// `total-records` of a snapshot's summary (0 for no snapshot).
pub fn total_records(snapshot: Option<&iceberg::spec::SnapshotRef>) -> u64 {
    summary_total(snapshot, "total-records")
}

/// A numeric value of a snapshot's summary, e.g. `total-data-files` (0 when absent).
pub fn summary_total(snapshot: Option<&iceberg::spec::SnapshotRef>, key: &str) -> u64 {
    snapshot
        .and_then(|s| s.summary().additional_properties.get(key))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
