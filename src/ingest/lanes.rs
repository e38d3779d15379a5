//! The parallel lanes of one ingest job: each lane is a reader thread decoding its share of the
//! source files into a bounded channel, and a writer task turning the batches into data files
//! of the bronze table (and of its quarantine table).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use iceberg::spec::DataFile;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::batch::{BatchAssembler, QuarantineAssembler};
use super::columns::quarantine_columns;
use super::sink::{FileStats, Message, RecordSink};
use super::{csv_source, json_source};
use crate::commit::{schema_of, JobContext, TableTarget};
use crate::error::{Error, Result};
use crate::fault::pause_point;
use crate::spec::{display_path_in, Format, IngestJob, TableName};
use crate::write::TableWriter;

/// What the lanes of one job read and wrote.
pub(super) struct LaneOutput {
    /// Per source file, in the order of the job's file list (with its index in it).
    pub stats: Vec<(usize, FileStats)>,
    /// Data files of the bronze table.
    pub data_files: Vec<DataFile>,
    /// Data files of the quarantine table.
    pub q_files: Vec<DataFile>,
}

/// What a lane's reader returns: the stats of its files, with their index in the job's list.
type ReadStats = Vec<(usize, FileStats)>;
/// What a lane's writer returns: its data files and its quarantine files.
type LaneFiles = (Vec<DataFile>, Vec<DataFile>);

/// The running lanes: one reader thread and one writer task each.
struct Lanes {
    readers: Vec<JoinHandle<Result<ReadStats>>>,
    writers: Vec<JoinHandle<Result<LaneFiles>>>,
}

/// Reads `files` in parallel lanes (one per core, at most one per file) and writes them as
/// data files of `target` (bad records as data files of `q_target`, when there is one).
/// Returns what every lane read and wrote, or the error that stopped one.
pub(super) async fn write_files(
    ctx: &JobContext,
    job: &IngestJob,
    target: &TableTarget,
    q_target: Option<&TableTarget>,
    files: &[PathBuf],
    progress: Arc<AtomicU64>,
) -> Result<LaneOutput> {
    let q_schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(
        &q_target
            .map(|t| t.metadata.current_schema().as_ref().clone())
            .map_or_else(|| schema_of(&quarantine_columns()), Ok)?,
    )?);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let lanes = cores.min(files.len()).max(1);
    let mut running = Lanes {
        readers: Vec::with_capacity(lanes),
        writers: Vec::with_capacity(lanes),
    };
    for lane in 0..lanes {
        let (writer, q_writer) = lane_writers(ctx, job, target, q_target).await?;
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
        running.readers.push(tokio::task::spawn_blocking(move || {
            read_all(&reader_job, &project_dir, lane_files, sink)
        }));
        running
            .writers
            .push(tokio::spawn(write_lane(rx, writer, q_writer)));
    }
    join_lanes(running, &job.table, files.len()).await
}

/// The writers of one lane, naming their files with one prefix (the run id and a fresh
/// uuid): one for `target`, and one for `q_target` when there is one.
async fn lane_writers(
    ctx: &JobContext,
    job: &IngestJob,
    target: &TableTarget,
    q_target: Option<&TableTarget>,
) -> Result<(TableWriter, Option<TableWriter>)> {
    let prefix = format!("{}-{}", ctx.run_id, uuid::Uuid::new_v4().simple());
    let writer = TableWriter::new(
        &job.table.to_string(),
        &target.metadata,
        ctx.catalog.file_io().clone(),
        job.target_file_size,
        &prefix,
    )
    .await?;
    let q_writer = match q_target {
        Some(t) => Some(
            TableWriter::new(
                &t.table.to_string(),
                &t.metadata,
                ctx.catalog.file_io().clone(),
                job.target_file_size,
                &prefix,
            )
            .await?,
        ),
        None => None,
    };
    Ok((writer, q_writer))
}

/// Waits for every lane. A reader's own error (a bad record under `fail`, an unreadable file)
/// explains the run's failure better than the writer that stopped because of it, and vice
/// versa: the first such error is returned. The stats come sorted by file index.
async fn join_lanes(lanes: Lanes, table: &TableName, files: usize) -> Result<LaneOutput> {
    let mut stats = Vec::with_capacity(files);
    let mut first_error = None;
    for reader in lanes.readers {
        match reader.await {
            Ok(Ok(s)) => stats.extend(s),
            Ok(Err(Error::WriterStopped)) => {}
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(e) => {
                first_error.get_or_insert(Error::Internal(format!(
                    "the reader of {table} panicked: {e}"
                )));
            }
        }
    }
    let mut data_files = Vec::new();
    let mut q_files = Vec::new();
    for writer in lanes.writers {
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
                    "the writer of {table} panicked: {e}"
                )));
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    stats.sort_by_key(|(i, _)| *i);
    Ok(LaneOutput {
        stats,
        data_files,
        q_files,
    })
}

/// Writes the batches of one lane; returns its data files and quarantine files.
async fn write_lane(
    mut rx: mpsc::Receiver<Message>,
    mut writer: TableWriter,
    mut q_writer: Option<TableWriter>,
) -> Result<LaneFiles> {
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
) -> Result<ReadStats> {
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
