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
use super::part::Part;
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
    /// What is left to read, in file order, when a lane stopped at a record with a key the
    /// table lacks: from that record on, and the lane's files after it.
    pub rest: Vec<Part>,
}

impl LaneOutput {
    /// This output and `more` (the load of what this one left) as one: the files of both,
    /// and one count per source file.
    pub fn absorb(&mut self, more: LaneOutput) {
        self.data_files.extend(more.data_files);
        self.q_files.extend(more.q_files);
        for (index, stats) in more.stats {
            match self.stats.iter_mut().find(|(i, _)| *i == index) {
                Some((_, s)) => {
                    s.records += stats.records;
                    s.good += stats.good;
                    s.bad += stats.bad;
                }
                None => self.stats.push((index, stats)),
            }
        }
        self.stats.sort_by_key(|(i, _)| *i);
        self.rest = more.rest;
    }
}

/// What a lane's reader returns: the stats of the files it read (with their index in the
/// job's list), and what it left to read when it stopped at a new key.
type ReadStats = (Vec<(usize, FileStats)>, Vec<Part>);
/// What a lane's writer returns: its data files and its quarantine files.
type LaneFiles = (Vec<DataFile>, Vec<DataFile>);

/// The running lanes: one reader thread and one writer task each.
struct Lanes {
    readers: Vec<JoinHandle<Result<ReadStats>>>,
    writers: Vec<JoinHandle<Result<LaneFiles>>>,
}

/// Reads `files` in parallel lanes (one per core, at most one per file) and writes them as
/// data files of `target` (bad records as data files of `q_target`, when there is one).
/// With `stop_at_new_keys` (JSON Lines only), a lane stops before the first record with a key
/// the job has no column for, and what it did not read is returned as the output's `rest`.
/// Returns what every lane read and wrote, or the error that stopped one.
pub(super) async fn write_files(
    ctx: &JobContext,
    job: &IngestJob,
    target: &TableTarget,
    q_target: Option<&TableTarget>,
    files: &[Part],
    stop_at_new_keys: bool,
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
        let lane_files: Vec<Part> = files.iter().skip(lane).step_by(lanes).cloned().collect();
        let (reader_job, project_dir) = (job.clone(), ctx.project_dir.clone());
        running.readers.push(tokio::task::spawn_blocking(move || {
            read_all(
                &reader_job,
                &project_dir,
                lane_files,
                stop_at_new_keys,
                sink,
            )
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
    let mut rest = Vec::new();
    let mut first_error = None;
    for reader in lanes.readers {
        match reader.await {
            Ok(Ok((s, r))) => {
                stats.extend(s);
                rest.extend(r);
            }
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
    rest.sort_by_key(|p: &Part| p.index);
    Ok(LaneOutput {
        stats,
        data_files,
        q_files,
        rest,
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

/// Reads `files` into `sink`, in order; with `stop_at_new_keys`, stops at the first record
/// with a key the job lacks and returns what is left (that record on, the files after).
fn read_all(
    job: &IngestJob,
    project_dir: &Path,
    files: Vec<Part>,
    stop_at_new_keys: bool,
    mut sink: RecordSink,
) -> Result<ReadStats> {
    let mut stats = Vec::with_capacity(files.len());
    let mut rest = Vec::new();
    for (n, part) in files.iter().enumerate() {
        let path = &part.path;
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
        sink.start_file(&display, bytes);
        let shown = PathBuf::from(&display);
        let stopped = match job.format {
            Format::Csv => csv_source::read_csv(job, path, &mut sink).map(|()| None),
            Format::Json => json_source::read_json(job, part, stop_at_new_keys, &mut sink),
        };
        let stopped = stopped.map_err(|e| relabel(e, path, &shown))?;
        stats.push((part.index, sink.start_file("", 0)));
        if let Some(start) = stopped {
            rest.push(Part {
                start,
                ..part.clone()
            });
            rest.extend(files[n + 1..].iter().cloned());
            break;
        }
    }
    sink.flush()?;
    Ok((stats, rest))
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
