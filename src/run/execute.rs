//! Executing a run's jobs: every job in scope starts as soon as the producers of its inputs are
//! done (independent jobs run concurrently), and each leaves its staged tables for the publish.
//! Long jobs report their row counts every two seconds.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::early_audit::EarlyAudits;
use super::options::RunOptions;
use super::transform_job::{TransformDone, TransformRun};
use crate::commit::{JobContext, JobKind, StagedTable};
use crate::engine::return_freed_memory;
use crate::error::{Error, Result};
use crate::fault::pause_point_async;
use crate::ingest::{run_ingest, IngestOutcome};
use crate::operation::audit::EarlyResults;
use crate::operation::{JobReport, Observer};
use crate::plan::{jobs_in_scope, JobId, Scope, Validated};
use crate::spec::{Pipeline, TableName};
use crate::transform::ParsedTransform;

/// What the jobs of a run left for the audit and the publish.
pub(crate) struct Executed {
    /// One report per job that ran, in the order they finished.
    pub reports: Vec<JobReport>,
    /// Every table staged (job outputs and quarantine tables), sorted by name.
    pub staged: Vec<StagedTable>,
    /// Rows each transform's `drop` expectations removed, by table and expectation.
    pub dropped: HashMap<TableName, BTreeMap<String, u64>>,
    /// Expectations audited while later jobs ran (with [`Start::audit_early`]).
    pub early: EarlyResults,
}

/// What one finished job left.
enum Outcome {
    Ingest(Box<IngestOutcome>),
    Transform(TransformDone),
}

/// Jobs in progress: start time and rows so far.
type RunningJobs = HashMap<TableName, (Instant, Arc<AtomicU64>)>;

/// Where a run starts from: tables already staged (an erase's rewrites: downstream jobs read
/// them, and they are published with the rest), and the jobs to run when not the ones
/// `options` puts in scope.
#[derive(Default)]
pub(crate) struct Start {
    pub staged: Vec<StagedTable>,
    pub jobs: Option<HashSet<JobId>>,
    /// Audit each expectation as soon as no job left in the run writes its tables (see
    /// [`EarlyAudits`]), while the other jobs run.
    pub audit_early: bool,
}

/// Runs every job of `validated`'s graph that `options` (or `start`) puts in scope, in
/// dependency order. On the first failure the other jobs are stopped and the error returned;
/// nothing is published either way.
pub(crate) async fn execute(
    ctx: Arc<JobContext>,
    pipeline: Arc<Pipeline>,
    validated: &Validated,
    options: Arc<RunOptions>,
    observer: Arc<dyn Observer>,
    start: Start,
) -> Result<Executed> {
    let graph = &validated.graph;
    let in_scope = match start.jobs {
        Some(jobs) => jobs,
        None => jobs_in_scope(graph, &pipeline, options.backfill.as_ref(), &options.select)?,
    };
    let spec = pipeline.clone();
    let (run_id, started) = (&ctx.run_id, ctx.started_at_micros);
    let mut early = EarlyAudits::new(&spec, validated, run_id, started, start.audit_early);
    let launcher = Launcher::new(ctx, pipeline, validated, options, observer, start.staged);
    let ticker = tokio::spawn(report_progress(
        launcher.running.clone(),
        launcher.observer.clone(),
    ));

    let mut done: HashSet<JobId> = HashSet::new();
    let mut started: HashSet<JobId> = HashSet::new();
    let mut tasks: JoinSet<(JobId, f64, Result<Outcome>)> = JoinSet::new();
    let mut reports = Vec::new();
    let mut dropped = HashMap::new();
    let result: Result<()> = async {
        loop {
            for job in &graph.order {
                if started.contains(job)
                    || !graph.dependencies(*job).iter().all(|d| done.contains(d))
                {
                    continue;
                }
                started.insert(*job);
                if !in_scope.contains(job) {
                    done.insert(*job);
                    continue;
                }
                launcher.spawn(*job, &mut tasks);
            }
            let joined = tokio::select! {
                joined = tasks.join_next() => joined,
                () = early.next(), if early.is_running() => continue,
            };
            let Some(joined) = joined else {
                break;
            };
            let (job, seconds, outcome) =
                joined.map_err(|e| Error::Internal(format!("a job panicked: {e}")))?;
            let report = keep(outcome?, seconds, &launcher.staged, &mut dropped);
            launcher.finished(&report);
            reports.push(report);
            done.insert(job);
            let pending = pending_tables(&spec, &in_scope, &done);
            early.start_ready(&pending, &launcher.staged.lock().expect("staged lock"));
        }
        Ok(())
    }
    .await;
    ticker.abort();
    if let Err(e) = result {
        tasks.abort_all();
        return Err(e);
    }
    let early = early.finish().await?;
    Ok(Executed {
        reports,
        staged: launcher.staged_tables(),
        dropped,
        early,
    })
}

/// The tables (and their quarantine tables) of the jobs in scope not done yet.
fn pending_tables(
    pipeline: &Pipeline,
    in_scope: &HashSet<JobId>,
    done: &HashSet<JobId>,
) -> HashSet<TableName> {
    let mut pending = HashSet::new();
    for job in in_scope.difference(done) {
        let table = match *job {
            JobId::Ingest(i) => &pipeline.ingests[i].table,
            JobId::Transform(i) => &pipeline.transforms[i].table,
        };
        pending.insert(table.quarantine());
        pending.insert(table.clone());
    }
    pending
}

/// What every job of a run shares, to start one as a task of its own.
struct Launcher {
    ctx: Arc<JobContext>,
    pipeline: Arc<Pipeline>,
    parsed: Arc<Vec<ParsedTransform>>,
    external: Arc<HashMap<TableName, iceberg::table::Table>>,
    staged: Arc<Mutex<HashMap<TableName, StagedTable>>>,
    running: Arc<Mutex<RunningJobs>>,
    options: Arc<RunOptions>,
    observer: Arc<dyn Observer>,
}

impl Launcher {
    /// The shared state of a run's jobs; `staged`: tables staged before the run (an erase's).
    fn new(
        ctx: Arc<JobContext>,
        pipeline: Arc<Pipeline>,
        validated: &Validated,
        options: Arc<RunOptions>,
        observer: Arc<dyn Observer>,
        staged: Vec<StagedTable>,
    ) -> Launcher {
        let staged = staged.into_iter().map(|s| (s.table.clone(), s)).collect();
        Launcher {
            ctx,
            parsed: Arc::new(validated.graph.transforms.clone()),
            external: Arc::new(validated.external.clone()),
            staged: Arc::new(Mutex::new(staged)),
            running: Default::default(),
            pipeline,
            options,
            observer,
        }
    }

    /// Takes a finished job off the progress, tells the observer, and gives freed memory back
    /// to the system when the process is large enough for it to matter
    /// ([`return_freed_memory`]).
    fn finished(&self, report: &JobReport) {
        if let Some(name) = TableName::parse(&report.table) {
            self.running.lock().expect("progress lock").remove(&name);
        }
        self.observer.job_finished(report);
        return_freed_memory();
    }

    /// Every table staged so far, sorted by name.
    fn staged_tables(&self) -> Vec<StagedTable> {
        let mut staged = std::mem::take(&mut *self.staged.lock().expect("staged lock"))
            .into_values()
            .collect::<Vec<_>>();
        staged.sort_by(|a, b| a.table.cmp(&b.table));
        staged
    }

    /// Starts `job` in `tasks`, telling the observer, with its row counter in the progress.
    fn spawn(&self, job: JobId, tasks: &mut JoinSet<(JobId, f64, Result<Outcome>)>) {
        let pipeline = &self.pipeline;
        let counter = Arc::new(AtomicU64::new(0));
        let (kind, table) = match job {
            JobId::Ingest(i) => (JobKind::Ingest, pipeline.ingests[i].table.clone()),
            JobId::Transform(i) => (JobKind::Transform, pipeline.transforms[i].table.clone()),
        };
        self.observer.job_started(kind, &table);
        self.running
            .lock()
            .expect("progress lock")
            .insert(table, (Instant::now(), counter.clone()));
        let (ctx, pipeline, parsed, external, staged, options) = (
            self.ctx.clone(),
            pipeline.clone(),
            self.parsed.clone(),
            self.external.clone(),
            self.staged.clone(),
            self.options.clone(),
        );
        tasks.spawn(async move {
            let t0 = Instant::now();
            let result = match job {
                JobId::Ingest(i) => run_ingest(&ctx, &pipeline.ingests[i], counter)
                    .await
                    .map(|o| Outcome::Ingest(Box::new(o))),
                JobId::Transform(i) => {
                    let done = TransformRun {
                        ctx: &ctx,
                        job: &pipeline.transforms[i],
                        parsed: &parsed[i],
                        external: &external,
                        staged: &staged,
                        options: &options,
                        engine: options.engine.as_ref().unwrap_or(&pipeline.engine),
                    }
                    .run(counter)
                    .await;
                    let table = &pipeline.transforms[i].table;
                    pause_point_async(&format!("transform-staged {table}")).await;
                    done.map(Outcome::Transform)
                }
            };
            (job, t0.elapsed().as_secs_f64(), result)
        });
    }
}

/// Keeps what a finished job staged (for downstream jobs and the publish) and reports it.
fn keep(
    outcome: Outcome,
    seconds: f64,
    staged: &Mutex<HashMap<TableName, StagedTable>>,
    dropped: &mut HashMap<TableName, BTreeMap<String, u64>>,
) -> JobReport {
    match outcome {
        Outcome::Ingest(o) => {
            let report = JobReport::ingest(&o, seconds);
            let mut s = staged.lock().expect("staged lock");
            if let Some(q) = o.quarantine {
                s.insert(q.table.clone(), q);
            }
            if let Some(new) = o.staged {
                s.insert(new.table.clone(), new);
            }
            report
        }
        Outcome::Transform(TransformDone::UpToDate { table, snapshot }) => {
            JobReport::transform(&table, Scope::UpToDate, snapshot, seconds)
        }
        Outcome::Transform(TransformDone::Staged {
            table,
            quarantine,
            dropped: counts,
            rows_in,
            scope,
            engine,
        }) => {
            let report = JobReport {
                engine: Some(engine),
                rows_in,
                rows_out: table.added_rows,
                quarantined: counts.values().sum(),
                files: table.added_files,
                bytes: table.added_bytes,
                ..JobReport::transform(&table.table, scope, Some(table.snapshot_id), seconds)
            };
            dropped.insert(table.table.clone(), counts);
            let mut s = staged.lock().expect("staged lock");
            if let Some(q) = quarantine {
                s.insert(q.table.clone(), *q);
            }
            s.insert(table.table.clone(), *table);
            report
        }
    }
}

/// Tells `observer` every two seconds how many rows each running job has written.
async fn report_progress(running: Arc<Mutex<RunningJobs>>, observer: Arc<dyn Observer>) {
    let mut interval = tokio::time::interval(Duration::from_secs(2));
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
}
