//! One ingest job: the source files its table has not loaded yet, decoded in parallel lanes and
//! written as a staged append snapshot of its bronze table (and of its quarantine table), with
//! the file ledger that makes the load exactly-once in the same snapshot.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::batch::{BatchAssembler, QuarantineAssembler};
use super::columns::{bronze_columns, quarantine_columns};
use super::discover::{discover_files, no_files_error};
use super::sink::{FileStats, Message, RecordSink};
use super::{csv_source, evolve, json_source, reload};
use crate::catalog::PipelineCatalog;
use crate::commit::ledger;
use crate::commit::summary::LOADED_FILES;
use crate::commit::{
    prepare_target, prepare_target_from, schema_of, stage_snapshot, Evolution, JobContext, JobKind,
    StagedTable, TableTarget, WriteMode,
};
use crate::error::{Error, Result};
use crate::fault::pause_point;
use crate::spec::{
    display_path_in, BadRecordPolicy, Format, IngestJob, SchemaEvolution, TableName,
};
use crate::write::TableWriter;

/// What one ingest job produced (staged, not yet published).
pub struct IngestOutcome {
    pub table: TableName,
    /// The append snapshot; `None` when every source file was already loaded.
    pub staged: Option<StagedTable>,
    pub quarantine: Option<StagedTable>,
    /// The table's current snapshot before this run.
    pub current_snapshot: Option<i64>,
    /// Source files skipped because an earlier snapshot loaded them.
    pub already_loaded: usize,
    pub files: Vec<FileStats>,
    /// With `--reload-changed`: the changed files loaded again, the rows of their earlier
    /// content removed, and the rows carried into rewritten data files.
    pub reloaded: usize,
    pub replaced_rows: u64,
    pub rewritten_rows: u64,
    /// Columns this run added to the table (`schema_evolution = "add_columns"`).
    pub added_columns: Vec<String>,
}

impl IngestOutcome {
    /// Records read from the sources.
    pub fn records(&self) -> u64 {
        self.files.iter().map(|f| f.records).sum()
    }
    /// Records sent to quarantine.
    pub fn quarantined(&self) -> u64 {
        self.files.iter().map(|f| f.bad).sum()
    }
}

/// Loads the source files of `job` that its table has not loaded yet into a staged append
/// snapshot of its bronze table (and of its quarantine table under the `quarantine` policy),
/// recording them in the snapshot's file ledger. A file the table loaded before whose content
/// changed stops the run. `progress` counts rows as they are read.
///
/// Files are spread over parallel lanes (one per core, at most one per file); each lane is a
/// reader thread feeding its own writer task, so decoding and Parquet encoding both scale.
pub async fn run_ingest(
    ctx: &JobContext,
    job: &IngestJob,
    progress: Arc<AtomicU64>,
) -> Result<IngestOutcome> {
    let (files, unmatched) = discover_files(job, &ctx.project_dir)?;
    let catalog = &ctx.catalog;
    let props = ctx.snapshot_properties(JobKind::Ingest);
    // Columns added by earlier runs stay in the table and are loaded where files have them.
    let live = catalog.load(&job.table).await?;
    let mut evolved = evolve::with_added_columns(job, live.as_ref().map(|t| t.metadata()));
    let mut target = bronze_target(catalog, live.clone(), &evolved).await?;
    // A pattern matching nothing is a mistake on a table's first load; later, loaded files
    // are often moved away from the landing folder, so it only means "nothing new".
    if let Some(pattern) = unmatched.first() {
        if target.base_location.is_none() {
            return Err(no_files_error(job, &ctx.project_dir, pattern));
        }
        tracing::warn!(table = %job.table, "no files match `{pattern}`");
    }
    // Exactly once: skip files recorded on the table's history; refuse changed ones.
    let clock = std::time::Instant::now();
    let ledger = ledger::loaded_files_with_checkpoint(&target.metadata, catalog.file_io()).await?;
    // Files recorded with the same size and modification time are not read again.
    let mut to_check = Vec::new();
    for path in &files {
        let shown = display_path_in(&ctx.project_dir, path)
            .to_string_lossy()
            .replace('\\', "/");
        let (size, modified) = ledger::stat(path)?;
        let known = ledger
            .get(&shown)
            .is_some_and(|(old, _)| ledger::unchanged(old, size, &modified));
        if !known {
            to_check.push((path.clone(), shown));
        }
    }
    let found = to_check.clone();
    let fingerprints = tokio::task::spawn_blocking(move || {
        found
            .iter()
            .map(|(p, shown)| ledger::fingerprint(p, shown))
            .collect::<Result<Vec<_>>>()
    })
    .await
    .map_err(|e| Error::Internal(format!("fingerprinting failed: {e}")))??;
    let mut new_files = Vec::new();
    let mut new_prints = Vec::new();
    let mut reloaded = std::collections::BTreeSet::new();
    for ((path, _), print) in to_check.iter().zip(fingerprints) {
        match ledger.get(&print.path) {
            None => {
                new_files.push(path.clone());
                new_prints.push(print);
            }
            Some((old, _)) if old.sha256 == print.sha256 => {}
            Some(_) if ctx.reload_changed => {
                reloaded.insert(print.path.clone());
                new_files.push(path.clone());
                new_prints.push(print);
            }
            Some((old, snapshot)) => {
                return Err(Error::Input {
                    path: PathBuf::from(&print.path),
                    message: format!(
                        "changed since {} loaded it in snapshot {snapshot} (size {} -> {}, different SHA-256); its old rows are in {}. Restore the file, deliver the new content under a new file name, or run with --reload-changed to replace the file's rows with its new content",
                        job.table, old.size, print.size, job.table
                    ),
                });
            }
        }
    }
    let already_loaded = files.len() - new_files.len();
    let current_snapshot = target.metadata.current_snapshot_id();
    let quarantine_table = job.table.quarantine();
    if new_files.is_empty() && target.base_location.is_some() {
        return Ok(IngestOutcome {
            table: job.table.clone(),
            staged: None,
            quarantine: None,
            current_snapshot,
            already_loaded,
            files: Vec::new(),
            reloaded: 0,
            replaced_rows: 0,
            rewritten_rows: 0,
            added_columns: Vec::new(),
        });
    }
    let files = new_files;
    // schema_evolution = "add_columns": new columns of the new files join the table first.
    let mut added_columns = Vec::new();
    if job.schema_evolution == SchemaEvolution::AddColumns {
        let (scanned, found) = {
            let (mut scanned, files) = (evolved.clone(), files.clone());
            tokio::task::spawn_blocking(move || {
                evolve::add_new_columns(&mut scanned, &files).map(|found| (scanned, found))
            })
            .await
            .map_err(|e| Error::Internal(format!("scanning for new columns failed: {e}")))??
        };
        if !found.is_empty() {
            tracing::info!(table = %job.table, columns = %found.join(", "), "adding columns found in the source files (schema_evolution = \"add_columns\")");
            evolved = scanned;
            target = bronze_target(catalog, live, &evolved).await?;
            added_columns = found;
        }
    }
    let job = &evolved;
    let mut props = props;
    props.insert(
        LOADED_FILES.to_string(),
        serde_json::to_string(&new_prints)
            .map_err(|e| Error::Internal(format!("cannot encode the file ledger: {e}")))?,
    );
    let q_target = match job.on_bad_record {
        BadRecordPolicy::Quarantine => Some(
            prepare_target(
                catalog,
                &quarantine_table,
                &quarantine_columns(),
                &[],
                HashMap::new(),
                &Evolution::Append { declared_in: None },
            )
            .await?,
        ),
        BadRecordPolicy::Fail => None,
    };
    let q_schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(
        &q_target
            .as_ref()
            .map(|t| t.metadata.current_schema().as_ref().clone())
            .map_or_else(|| schema_of(&quarantine_columns()), Ok)?,
    )?);

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let lanes = cores.min(files.len()).max(1);
    let mut readers = Vec::with_capacity(lanes);
    let mut writers = Vec::with_capacity(lanes);
    for lane in 0..lanes {
        let prefix = format!("{}-{}", ctx.run_id, uuid::Uuid::new_v4().simple());
        let writer = TableWriter::new(
            &job.table.to_string(),
            &target.metadata,
            catalog.file_io().clone(),
            job.target_file_size,
            &prefix,
        )
        .await?;
        let q_writer = match &q_target {
            Some(t) => Some(
                TableWriter::new(
                    &quarantine_table.to_string(),
                    &t.metadata,
                    catalog.file_io().clone(),
                    job.target_file_size,
                    &prefix,
                )
                .await?,
            ),
            None => None,
        };
        let (tx, rx) = mpsc::channel::<Message>(4);
        let sink = RecordSink::new(
            BatchAssembler::new(writer.schema().clone(), ctx.started_at_micros, &ctx.run_id),
            QuarantineAssembler::new(q_schema.clone(), ctx.started_at_micros, &ctx.run_id),
            job.on_bad_record,
            tx,
            progress.clone(),
        );
        let lane_files: Vec<(usize, PathBuf)> = files
            .iter()
            .cloned()
            .enumerate()
            .skip(lane)
            .step_by(lanes)
            .collect();
        let (reader_job, project_dir) = (job.clone(), ctx.project_dir.clone());
        readers.push(tokio::task::spawn_blocking(move || {
            read_all(&reader_job, &project_dir, lane_files, sink)
        }));
        writers.push(tokio::spawn(write_lane(rx, writer, q_writer)));
    }

    // A reader's own error (a bad record under `fail`, an unreadable file) explains the run's
    // failure better than the writer that stopped because of it, and vice versa.
    let mut stats = Vec::with_capacity(files.len());
    let mut first_error = None;
    for reader in readers {
        match reader.await {
            Ok(Ok(s)) => stats.extend(s),
            Ok(Err(Error::WriterStopped)) => {}
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(e) => {
                first_error.get_or_insert(Error::Internal(format!(
                    "the reader of {} panicked: {e}",
                    job.table
                )));
            }
        }
    }
    let mut data_files = Vec::new();
    let mut q_files = Vec::new();
    for writer in writers {
        match writer.await {
            Ok(Ok((d, q))) => {
                data_files.extend(d);
                q_files.extend(q);
            }
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(e) => {
                first_error.get_or_insert(Error::Internal(format!(
                    "the writer of {} panicked: {e}",
                    job.table
                )));
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    stats.sort_by_key(|(i, _)| *i);

    // --reload-changed: the old rows of reloaded files go in the same snapshot.
    let (mut replaced_rows, mut rewritten_rows) = (0, 0);
    let (mode, q_mode) = if reloaded.is_empty() {
        (WriteMode::Append, WriteMode::Append)
    } else {
        let removal = remove_old_rows(ctx, job, &target, "_source_file", &reloaded).await?;
        tracing::info!(table = %job.table, rows = removal.rows, files = ?reloaded, "reloading changed files");
        replaced_rows = removal.rows;
        rewritten_rows = removal.rewritten.iter().map(|f| f.record_count()).sum();
        data_files.extend(removal.rewritten);
        let q_mode = match &q_target {
            Some(t) => {
                let q = remove_old_rows(ctx, job, t, "source_file", &reloaded).await?;
                q_files.extend(q.rewritten);
                WriteMode::Rewrite(q.deleted)
            }
            None => WriteMode::Append,
        };
        (WriteMode::Rewrite(removal.deleted), q_mode)
    };
    tracing::debug!(table = %job.table, ms = clock.elapsed().as_millis() as u64, "files written");
    let staged = stage_snapshot(target, data_files, catalog.file_io(), props.clone(), mode).await?;
    tracing::debug!(table = %job.table, ms = clock.elapsed().as_millis() as u64, "snapshot staged");
    let quarantine = match q_target {
        // A quarantine snapshot only when something changes (or the table is new).
        Some(t)
            if !q_files.is_empty() || t.base_location.is_none() || q_mode != WriteMode::Append =>
        {
            Some(stage_snapshot(t, q_files, catalog.file_io(), props, q_mode).await?)
        }
        _ => None,
    };
    Ok(IngestOutcome {
        table: job.table.clone(),
        staged: Some(staged),
        quarantine,
        current_snapshot,
        already_loaded,
        files: stats.into_iter().map(|(_, s)| s).collect(),
        reloaded: reloaded.len(),
        replaced_rows,
        rewritten_rows,
        added_columns,
    })
}

/// The bronze table of `job` (as loaded: `live`) prepared for an append of its columns.
async fn bronze_target(
    catalog: &PipelineCatalog,
    live: Option<iceberg::table::Table>,
    job: &IngestJob,
) -> Result<TableTarget> {
    let evolution = Evolution::Append {
        declared_in: Some(job.origin.clone()),
    };
    prepare_target_from(
        catalog,
        &job.table,
        live,
        &bronze_columns(job),
        &job.partition_by,
        HashMap::new(),
        &evolution,
    )
    .await
}

/// Rewrites the data files of `target` holding rows whose `column` names a reloaded file.
async fn remove_old_rows(
    ctx: &JobContext,
    job: &IngestJob,
    target: &TableTarget,
    column: &str,
    reloaded: &std::collections::BTreeSet<String>,
) -> Result<reload::Removal> {
    let prefix = format!("{}-{}", ctx.run_id, uuid::Uuid::new_v4().simple());
    let writer = TableWriter::new(
        &target.table.to_string(),
        &target.metadata,
        ctx.catalog.file_io().clone(),
        job.target_file_size,
        &prefix,
    )
    .await?;
    reload::remove_rows_of(
        &target.table,
        &target.metadata,
        ctx.catalog.file_io(),
        column,
        reloaded,
        writer,
    )
    .await
}

/// Writes the batches of one lane; returns its data files and quarantine files.
async fn write_lane(
    mut rx: mpsc::Receiver<Message>,
    mut writer: TableWriter,
    mut q_writer: Option<TableWriter>,
) -> Result<(Vec<iceberg::spec::DataFile>, Vec<iceberg::spec::DataFile>)> {
    while let Some(message) = rx.recv().await {
        match message {
            Message::Rows(batch) => writer.write(batch).await?,
            Message::Quarantine(batch) => {
                if let Some(w) = q_writer.as_mut() {
                    w.write(batch).await?
                }
            }
        }
    }
    let data = writer.close().await?;
    pause_point("bronze-files-written");
    let quarantine = match q_writer {
        Some(w) => w.close().await?,
        None => Vec::new(),
    };
    Ok((data, quarantine))
}

/// Reads `files` (with their index in the job's file list) into `sink`, in order.
fn read_all(
    job: &IngestJob,
    project_dir: &Path,
    files: Vec<(usize, PathBuf)>,
    mut sink: RecordSink,
) -> Result<Vec<(usize, FileStats)>> {
    let mut stats = Vec::with_capacity(files.len());
    for (n, (_, path)) in files.iter().enumerate() {
        let display = display_path_in(project_dir, path)
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if bytes == 0 {
            // Nothing to load; said, since an empty delivery is often a failed upload.
            let what = if job.format == Format::Csv && job.csv.header {
                "0 bytes, not even a header line"
            } else {
                "0 bytes"
            };
            let file = &display;
            tracing::warn!(table = %job.table, "{file} is empty ({what}): nothing loaded from it");
        }
        let previous = sink.start_file(&display, bytes);
        if n > 0 {
            stats.push((files[n - 1].0, previous));
        }
        let shown = PathBuf::from(&display);
        let result = match job.format {
            Format::Csv => csv_source::read_csv(job, path, &mut sink),
            Format::Json => json_source::read_json(job, path, &mut sink),
        };
        result.map_err(|e| relabel(e, path, &shown))?;
    }
    if let Some((last, _)) = files.last() {
        stats.push((*last, sink.start_file("", 0)));
    }
    sink.flush()?;
    Ok(stats)
}

/// Errors name files as the user wrote them (relative to the project).
fn relabel(e: Error, full: &Path, shown: &Path) -> Error {
    match e {
        Error::BadRecord { file, line, reason } if file == full => Error::BadRecord {
            file: shown.to_path_buf(),
            line,
            reason,
        },
        Error::Io { path, source } if path == full => Error::Io {
            path: shown.to_path_buf(),
            source,
        },
        other => other,
    }
}
