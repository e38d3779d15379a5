//! One run of a pipeline, end to end: validate, run every job in dependency order (independent
//! jobs concurrently), stage each output, then publish every table at once.
//!
//! Guarantee: either every table of the run moves to its new snapshot in one catalog
//! transaction, or (on any error, in any job) none does. Data files written by a failed run
//! are never referenced by any table.

mod lock;
mod rollback;
mod validate;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use iceberg_datafusion::IcebergStaticTableProvider;
use serde::Serialize;
use tokio::task::JoinSet;

pub use lock::{lock_path, LockWait};
pub use rollback::rollback;
pub use validate::{validate, Validated};

use crate::catalog::{Publication, RunRecord, TableRecord};
use crate::commit::StagedTable;
use crate::context::{new_run_id, JobContext};
use crate::error::{Error, Result};
use crate::ingest::{run_ingest, FileStats};
use crate::plan::JobId;
use crate::spec::{Pipeline, TableName};
use crate::transform::{new_session, register_table, run_transform, CountedTable};

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
}

/// Receives progress while a run works.
pub trait Observer: Send + Sync {
    fn job_started(&self, _job: &str, _table: &TableName) {}
    fn job_progress(&self, _table: &TableName, _rows: u64, _seconds: f64) {}
    fn job_finished(&self, _report: &JobReport) {}
    fn publishing(&self, _tables: usize) {}
    /// Another run of the pipeline holds the lock; this run waits for it.
    fn waiting_for(&self, _holder: &str) {}
}

/// An observer that shows nothing.
pub struct Silent;
impl Observer for Silent {}

/// Jobs in progress: start time and rows so far.
type RunningJobs = HashMap<TableName, (Instant, Arc<AtomicU64>)>;

enum Outcome {
    Ingest(Box<crate::ingest::IngestOutcome>),
    Transform(Box<StagedTable>, u64),
}

/// Runs the whole pipeline and publishes its tables atomically.
///
/// Runs of the same pipeline on the same catalog are serialized: a second run waits for the
/// first (up to `wait`), or fails at once when `wait` is `LockWait(None)`.
pub async fn run_pipeline(
    pipeline: &Pipeline,
    observer: Arc<dyn Observer>,
    wait: LockWait,
) -> Result<RunReport> {
    let mut validated = validate(pipeline).await?;
    let database = validated.catalog.database().to_path_buf();
    let (name, waiter) = (pipeline.name.clone(), observer.clone());
    let lock = tokio::task::spawn_blocking(move || {
        lock::acquire(&database, &name, wait, |holder| waiter.waiting_for(holder))
    })
    .await
    .map_err(|e| Error::Usage(format!("lock task failed: {e}")))??;
    if lock.waited {
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
    });
    let pipeline = Arc::new(pipeline.clone());
    let parsed = Arc::new(validated.plan.transforms.clone());
    let external = Arc::new(validated.external);
    let staged: Arc<Mutex<HashMap<TableName, StagedTable>>> = Default::default();
    let running: Arc<Mutex<RunningJobs>> = Default::default();

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
                let (ctx, pipeline, parsed, external, staged) = (
                    ctx.clone(),
                    pipeline.clone(),
                    parsed.clone(),
                    external.clone(),
                    staged.clone(),
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
                            transform_job(&ctx, t, &parsed[i], &external, &staged, counter).await
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
                        rows_out: new.map_or(0, |s| s.added_rows),
                        quarantined: o.quarantined(),
                        files: new.map_or(0, |s| s.added_files),
                        bytes: new.map_or(0, |s| s.added_bytes),
                        snapshot_id: new
                            .map(|s| s.snapshot_id)
                            .or(o.current_snapshot)
                            .unwrap_or_default(),
                        already_loaded: o.already_loaded,
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
                Outcome::Transform(st, rows_in) => {
                    let report = JobReport {
                        job: "transform".into(),
                        table: st.table.to_string(),
                        rows_in,
                        rows_out: st.added_rows,
                        quarantined: 0,
                        already_loaded: 0,
                        files: st.added_files,
                        bytes: st.added_bytes,
                        snapshot_id: st.snapshot_id,
                        seconds,
                        sources: Vec::new(),
                    };
                    staged
                        .lock()
                        .expect("staged lock")
                        .insert(st.table.clone(), *st);
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
    let staged = std::mem::take(&mut *staged.lock().expect("staged lock"));
    observer.publishing(staged.len());
    let mut publication = Publication::default();
    let mut names: Vec<_> = staged.keys().cloned().collect();
    names.sort();
    let tables = names.iter().map(|t| t.to_string()).collect();
    let mut staged = staged;
    let mut record = RunRecord {
        run_id: run_id.clone(),
        pipeline: pipeline.name.clone(),
        kind: "run".into(),
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        finished_at: String::new(),
        rolls_back: None,
        tables: Vec::new(),
    };
    for name in names {
        let table = staged.remove(&name).expect("staged table");
        record.tables.push(TableRecord {
            table: name.to_string(),
            operation: "overwrite".into(),
            snapshot_before: table.metadata.current_snapshot_id(),
            snapshot_after: Some(table.snapshot_id),
            rows: table.added_rows,
        });
        publication.changes.push(table.into_change()?);
    }
    record.finished_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    publication.record = Some(record);
    validated.catalog.publish(publication).await?;
    drop(lock);

    Ok(RunReport {
        run_id,
        pipeline: pipeline.name.clone(),
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        seconds: started.elapsed().as_secs_f64(),
        published: true,
        tables,
        jobs: reports,
    })
}

async fn transform_job(
    ctx: &JobContext,
    job: &crate::spec::TransformJob,
    parsed: &crate::transform::ParsedTransform,
    external: &HashMap<TableName, iceberg::table::Table>,
    staged: &Mutex<HashMap<TableName, StagedTable>>,
    counter: Arc<AtomicU64>,
) -> Result<Outcome> {
    let session = new_session();
    let mut rows_in = 0u64;
    for input in &parsed.inputs {
        let staged_input = staged.lock().expect("staged lock").get(input).cloned();
        let table = match staged_input {
            Some(s) => s.reader(ctx.catalog.file_io())?,
            // External, or produced by this pipeline but unchanged in this run.
            None => match external.get(input) {
                Some(t) => t.clone(),
                None => ctx.catalog.load_existing(input).await?,
            },
        };
        let rows = total_records(table.metadata().current_snapshot());
        rows_in += rows;
        let provider = IcebergStaticTableProvider::try_new_from_table(table)
            .await
            .map_err(|e| Error::table(input, "cannot read table", e))?;
        register_table(
            &session,
            input,
            Arc::new(CountedTable::new(Arc::new(provider), rows)),
        )?;
    }
    let outcome = run_transform(ctx, &session, job, parsed, counter).await?;
    Ok(Outcome::Transform(Box::new(outcome.staged), rows_in))
}

/// `total-records` of a snapshot's summary (0 for no snapshot).
pub fn total_records(snapshot: Option<&iceberg::spec::SnapshotRef>) -> u64 {
    snapshot
        .and_then(|s| {
            s.summary()
                .additional_properties
                .get("total-records")
                .cloned()
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
