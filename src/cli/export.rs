//! `pipeline query --format csv|json|parquet [--out FILE]`: a query's rows streamed out, batch by
//! batch, never held whole. To a file, the rows go to a temporary file beside it that takes
//! FILE's name only once the last batch is written and synced: a query that fails, is stopped or
//! is killed leaves no FILE (a killed one may leave its hidden `.partial` file). The lake's own
//! folder is never written to.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use futures::TryStreamExt;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde::Serialize;

use super::query_args::QueryFormat;
use crate::catalog::PipelineCatalog;
use crate::error::{Error, Result};
use crate::inspect;

/// What an export to a file wrote.
#[derive(Debug, Serialize)]
pub struct Exported {
    pub file: PathBuf,
    pub format: &'static str,
    pub rows: u64,
    pub bytes: u64,
}

/// Where the rows go, and in what form.
pub struct Target<'a> {
    pub format: QueryFormat,
    pub out: Option<&'a Path>,
    pub force: bool,
}

/// Runs `sql` and streams its rows to `target`: stdout (csv, json) or a file. Returns what was
/// written to a file (`None` for stdout).
pub async fn export(
    catalog: &PipelineCatalog,
    sql: &str,
    as_of: Option<i64>,
    target: Target<'_>,
) -> Result<Option<Exported>> {
    let Some(out) = target.out else {
        if target.format == QueryFormat::Parquet {
            return Err(Error::Usage(
                "query --format parquet writes a file: add --out FILE.parquet".into(),
            ));
        }
        let (schema, stream) = inspect::query_stream(catalog, sql, as_of).await?;
        let sink = Sink::open(target.format, schema, crate::secrets::stdout())?;
        stream_into(sink, stream).await?;
        return Ok(None);
    };
    check_destination(catalog, out, target.force)?;
    let dir = parent_of(out);
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned());
    let prefix = format!(".{}.", name.unwrap_or_default());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".partial");
    as_ordinary_file(&mut builder);
    let temp = builder.tempfile_in(&dir).map_err(|e| Error::io(&dir, e))?;
    let file = temp.as_file().try_clone().map_err(|e| Error::io(out, e))?;
    let (schema, stream) = inspect::query_stream(catalog, sql, as_of).await?;
    let sink = Sink::open(target.format, schema, BufWriter::new(file))?;
    let (rows, writer) = stream_into(sink, stream).await?;
    let file = writer
        .into_inner()
        .map_err(|e| Error::io(out, e.into_error()))?;
    file.sync_all().map_err(|e| Error::io(out, e))?;
    let bytes = file.metadata().map_err(|e| Error::io(out, e))?.len();
    let persisted = match target.force {
        true => temp.persist(out).map(|_| ()),
        false => temp.persist_noclobber(out).map(|_| ()),
    };
    persisted.map_err(|e| match e.error.kind() {
        std::io::ErrorKind::AlreadyExists => exists(out),
        _ => Error::io(out, e.error),
    })?;
    Ok(Some(Exported {
        file: out.to_path_buf(),
        format: target.format.name(),
        rows,
        bytes,
    }))
}

/// Refuses a FILE that exists (without `force`), is a folder, or lies in the embedded
/// catalog's warehouse folder (the lake's files are the catalog's to write).
fn check_destination(catalog: &PipelineCatalog, out: &Path, force: bool) -> Result<()> {
    if out.is_dir() {
        return Err(Error::Usage(format!(
            "--out {}: is a folder; name a file in it",
            out.display()
        )));
    }
    if out.exists() && !force {
        return Err(exists(out));
    }
    let dir = parent_of(out);
    let dir = std::fs::canonicalize(&dir).map_err(|e| Error::io(&dir, e))?;
    if let Some(warehouse) = catalog.local_warehouse() {
        let warehouse = std::fs::canonicalize(warehouse).unwrap_or(warehouse.to_path_buf());
        if dir.starts_with(&warehouse) {
            return Err(Error::Usage(format!(
                "--out {}: is inside the warehouse folder {}, whose files only the catalog writes; write the export elsewhere",
                out.display(),
                warehouse.display()
            )));
        }
    }
    Ok(())
}

/// A file as any other the user creates: its mode as the umask allows (a temporary file
/// would be owner-only).
fn as_ordinary_file(builder: &mut tempfile::Builder) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    #[cfg(not(unix))]
    let _ = builder;
}

fn exists(out: &Path) -> Error {
    Error::Usage(format!(
        "--out {}: the file exists; add --force to replace it",
        out.display()
    ))
}

/// The folder FILE goes in (`.` for a bare name).
fn parent_of(out: &Path) -> PathBuf {
    match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes every batch of `stream` to `sink`; returns the rows written and the finished writer.
async fn stream_into<W: Write + Send>(
    mut sink: Sink<W>,
    mut stream: datafusion::execution::SendableRecordBatchStream,
) -> Result<(u64, W)> {
    let mut rows = 0u64;
    while let Some(batch) = stream.try_next().await? {
        rows += batch.num_rows() as u64;
        sink.write(&batch)?;
    }
    Ok((rows, sink.finish()?))
}

/// One format's writer.
enum Sink<W: Write + Send> {
    Csv(arrow_csv::Writer<W>),
    Json(arrow_json::Writer<W, arrow_json::writer::LineDelimited>),
    Parquet(ArrowWriter<W>),
}

impl<W: Write + Send> Sink<W> {
    fn open(format: QueryFormat, schema: SchemaRef, writer: W) -> Result<Self> {
        Ok(match format {
            QueryFormat::Csv => Sink::Csv(arrow_csv::WriterBuilder::new().build(writer)),
            QueryFormat::Json => Sink::Json(
                arrow_json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build(writer),
            ),
            QueryFormat::Parquet => {
                let zstd = ZstdLevel::try_new(3).map_err(parquet_error)?;
                let props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(zstd))
                    .build();
                Sink::Parquet(
                    ArrowWriter::try_new(writer, schema, Some(props)).map_err(parquet_error)?,
                )
            }
            QueryFormat::Table => {
                return Err(Error::Internal("a table is printed, not exported".into()))
            }
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            Sink::Csv(w) => w.write(batch)?,
            Sink::Json(w) => w.write(batch)?,
            Sink::Parquet(w) => w.write(batch).map_err(parquet_error)?,
        }
        Ok(())
    }

    fn finish(self) -> Result<W> {
        Ok(match self {
            Sink::Csv(w) => w.into_inner(),
            Sink::Json(mut w) => {
                w.finish()?;
                w.into_inner()
            }
            Sink::Parquet(w) => w.into_inner().map_err(parquet_error)?,
        })
    }
}

fn parquet_error(e: parquet::errors::ParquetError) -> Error {
    Error::Failed(format!("writing Parquet: {e}"))
}
