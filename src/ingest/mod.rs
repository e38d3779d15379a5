//! Ingest jobs: CSV / JSON Lines source files -> a bronze table (and its quarantine table).
//!
//! A blocking reader thread decodes records strictly against the declared schema and sends
//! record batches through a bounded channel to the async writer, so memory stays bounded
//! whatever the file sizes. Every record is either loaded or quarantined (or fails the run):
//! `good + quarantined = records` per file.

mod batch;
mod csv_source;
mod json_source;
mod sink;
pub mod values;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use iceberg::spec::{PrimitiveType, Type};
use tokio::sync::mpsc;

pub use sink::FileStats;

use self::batch::{BatchAssembler, QuarantineAssembler};
use self::sink::{Message, RecordSink};
use crate::catalog::PipelineCatalog;
use crate::commit::{prepare_target, schema_of, stage_overwrite, DesiredColumn, StagedTable};
use crate::error::{Error, Result};
use crate::spec::{display_path_in, BadRecordPolicy, Format, IngestJob};
use crate::write::TableWriter;

/// What one ingest job produced (staged, not yet published).
pub struct IngestOutcome {
    pub staged: StagedTable,
    pub quarantine: Option<StagedTable>,
    pub files: Vec<FileStats>,
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

/// Run-wide values every job needs.
pub struct JobContext {
    pub catalog: Arc<PipelineCatalog>,
    pub project_dir: PathBuf,
    pub pipeline: String,
    pub run_id: String,
    /// Run start, microseconds since the epoch (the `_ingested_at` of every row).
    pub started_at_micros: i64,
}

impl JobContext {
    /// Snapshot summary properties recorded with every table this run writes.
    pub fn snapshot_properties(&self, job_kind: &str) -> HashMap<String, String> {
        HashMap::from([
            ("pipeline.name".to_string(), self.pipeline.clone()),
            ("pipeline.run-id".to_string(), self.run_id.clone()),
            ("pipeline.job".to_string(), job_kind.to_string()),
        ])
    }
}

/// Lists the files an ingest job reads, sorted, each once. A pattern matching nothing is an error.
pub fn discover_files(job: &IngestJob, project_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for pattern in &job.paths {
        let full = project_dir.join(pattern);
        let full_text = full.to_string_lossy();
        let matches = glob::glob(&full_text).map_err(|e| Error::Pipeline {
            file: job.origin.file.clone(),
            message: format!(
                "line {}: ingest into {}: invalid path pattern `{pattern}`: {e}",
                job.origin.line, job.table
            ),
            hint: None,
        })?;
        let before = files.len();
        for m in matches {
            let path = m.map_err(|e| {
                Error::io(e.path().to_path_buf(), std::io::Error::other(e.to_string()))
            })?;
            if path.is_file() {
                files.push(path);
            }
        }
        if files.len() == before {
            return Err(Error::Pipeline {
                file: job.origin.file.clone(),
                message: format!(
                    "line {}: ingest into {}: no files match `{pattern}`",
                    job.origin.line, job.table
                ),
                hint: Some(format!(
                    "paths are relative to the project directory {}",
                    project_dir.display()
                )),
            });
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// The columns of a bronze table: the declared ones, then the lineage columns.
pub fn bronze_columns(job: &IngestJob) -> Vec<DesiredColumn> {
    let mut columns: Vec<DesiredColumn> = job
        .columns
        .iter()
        .map(|c| DesiredColumn {
            name: c.name.clone(),
            ty: c.ty.iceberg_type(),
            required: c.required,
        })
        .collect();
    columns.extend(lineage_columns());
    columns
}

fn lineage_columns() -> Vec<DesiredColumn> {
    let col = |name: &str, p: PrimitiveType| DesiredColumn {
        name: name.into(),
        ty: Type::Primitive(p),
        required: true,
    };
    vec![
        col("_source_file", PrimitiveType::String),
        col("_source_line", PrimitiveType::Long),
        col("_ingested_at", PrimitiveType::Timestamptz),
        col("_run_id", PrimitiveType::String),
    ]
}

/// The columns of a quarantine table.
pub fn quarantine_columns() -> Vec<DesiredColumn> {
    let col = |name: &str, p: PrimitiveType, required: bool| DesiredColumn {
        name: name.into(),
        ty: Type::Primitive(p),
        required,
    };
    vec![
        col("source_file", PrimitiveType::String, true),
        col("line", PrimitiveType::Long, true),
        col("raw", PrimitiveType::String, true),
        col("reason", PrimitiveType::String, true),
        col("column", PrimitiveType::String, false),
        col("_ingested_at", PrimitiveType::Timestamptz, true),
        col("_run_id", PrimitiveType::String, true),
    ]
}

/// Loads every source file of `job` into a staged full refresh of its bronze table (and of its
/// quarantine table under the `quarantine` policy). `progress` counts rows as they are read.
pub async fn run_ingest(
    ctx: &JobContext,
    job: &IngestJob,
    progress: Arc<AtomicU64>,
) -> Result<IngestOutcome> {
    let files = discover_files(job, &ctx.project_dir)?;
    let catalog = &ctx.catalog;
    let props = ctx.snapshot_properties("ingest");
    let target = prepare_target(
        catalog,
        &job.table,
        &bronze_columns(job),
        &job.partition_by,
        HashMap::new(),
    )
    .await?;
    let quarantine_table = job.table.quarantine();
    let q_target = match job.on_bad_record {
        BadRecordPolicy::Quarantine => Some(
            prepare_target(
                catalog,
                &quarantine_table,
                &quarantine_columns(),
                &[],
                HashMap::new(),
            )
            .await?,
        ),
        BadRecordPolicy::Fail => None,
    };
    let prefix = format!("{}-{}", ctx.run_id, uuid::Uuid::new_v4().simple());
    let mut writer = TableWriter::new(
        &job.table.to_string(),
        &target.metadata,
        catalog.file_io().clone(),
        job.target_file_size,
        &prefix,
    )
    .await?;
    let mut q_writer = match &q_target {
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
    let q_schema = match &q_writer {
        Some(w) => w.schema().clone(),
        None => Arc::new(iceberg::arrow::schema_to_arrow_schema(&schema_of(
            &quarantine_columns(),
        )?)?),
    };

    let (tx, mut rx) = mpsc::channel::<Message>(4);
    let sink = RecordSink::new(
        BatchAssembler::new(writer.schema().clone(), ctx.started_at_micros, &ctx.run_id),
        QuarantineAssembler::new(q_schema, ctx.started_at_micros, &ctx.run_id),
        job.on_bad_record,
        tx,
        progress,
    );
    let reader_job = job.clone();
    let project_dir = ctx.project_dir.clone();
    let reader =
        tokio::task::spawn_blocking(move || read_all(&reader_job, &project_dir, files, sink));

    let mut write_error = None;
    while let Some(message) = rx.recv().await {
        let result = match message {
            Message::Rows(batch) => writer.write(batch).await,
            Message::Quarantine(batch) => match q_writer.as_mut() {
                Some(w) => w.write(batch).await,
                None => Ok(()),
            },
        };
        if let Err(e) = result {
            write_error = Some(e);
            break;
        }
    }
    drop(rx);
    let read_result = reader
        .await
        .map_err(|e| Error::Usage(format!("the reader of {} panicked: {e}", job.table)))?;
    if let Some(e) = write_error {
        return Err(e);
    }
    let file_stats = read_result?;

    let data_files = writer.close().await?;
    let staged = stage_overwrite(target, data_files, catalog.file_io(), props.clone()).await?;
    let quarantine = match (q_target, q_writer) {
        (Some(t), Some(w)) => {
            let files = w.close().await?;
            Some(stage_overwrite(t, files, catalog.file_io(), props).await?)
        }
        _ => None,
    };
    Ok(IngestOutcome {
        staged,
        quarantine,
        files: file_stats,
    })
}

fn read_all(
    job: &IngestJob,
    project_dir: &Path,
    files: Vec<PathBuf>,
    mut sink: RecordSink,
) -> Result<Vec<FileStats>> {
    let mut stats = Vec::with_capacity(files.len());
    for (i, path) in files.iter().enumerate() {
        let display = display_path_in(project_dir, path)
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let previous = sink.start_file(&display, bytes);
        if i > 0 {
            stats.push(previous);
        }
        let shown = PathBuf::from(&display);
        let result = match job.format {
            Format::Csv => csv_source::read_csv(job, path, &mut sink),
            Format::Json => json_source::read_json(job, path, &mut sink),
        };
        result.map_err(|e| relabel(e, path, &shown))?;
        let (records, bad) = (sink.stats.records, sink.stats.bad);
        tracing::debug!(records, bad, "read {}", shown.display());
    }
    if !files.is_empty() {
        stats.push(sink.start_file("", 0));
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
