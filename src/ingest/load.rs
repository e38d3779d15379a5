//! One ingest job: the source files its table has not loaded yet, decoded in parallel lanes and
//! written as a staged append snapshot of its bronze table (and of its quarantine table), with
//! the file ledger that makes the load exactly-once in the same snapshot.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use iceberg::spec::DataFile;

use super::columns::{bronze_columns, quarantine_columns};
use super::discover::{discover_files, no_files_error};
use super::lanes::{self, LaneOutput};
use super::part::Part;
use super::pending::{unloaded_files, Unloaded};
use super::sink::FileStats;
use super::{evolve, reload};
use crate::catalog::PipelineCatalog;
use crate::commit::ledger;
use crate::commit::summary::LOADED_FILES;
use crate::commit::{
    prepare_target, prepare_target_from, stage_snapshot, widen_unpublished, Evolution, JobContext,
    JobKind, StagedTable, TableTarget, WriteMode,
};
use crate::error::{Error, Result};
use crate::spec::{BadRecordPolicy, Format, IngestJob, SchemaEvolution, TableName};
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
    /// The outcome of a run that found no new source file for `target`: nothing staged,
    /// nothing read.
    fn nothing_new(job: &IngestJob, target: &TableTarget, already_loaded: usize) -> Self {
        IngestOutcome {
            table: job.table.clone(),
            staged: None,
            quarantine: None,
            current_snapshot: target.metadata.current_snapshot_id(),
            already_loaded,
            files: Vec::new(),
            reloaded: 0,
            replaced_rows: 0,
            rewritten_rows: 0,
            added_columns: Vec::new(),
        }
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
    let new = new_files_of(ctx, job, &target, &files).await?;
    let already_loaded = files.len() - new.files.len();
    let current_snapshot = target.metadata.current_snapshot_id();
    if new.files.is_empty() && target.base_location.is_some() {
        return Ok(IngestOutcome::nothing_new(job, &target, already_loaded));
    }
    let mut props = props;
    props.insert(LOADED_FILES.to_string(), ledger_json(&new.prints)?);
    let q_target = quarantine_target(catalog, job).await?;
    let files = Part::whole(&new.files);
    let (mut written, added_columns) = write_evolving(
        ctx,
        live,
        &mut evolved,
        &mut target,
        q_target.as_ref(),
        &files,
        progress,
    )
    .await?;
    let job = &evolved;
    // --reload-changed: the old rows of reloaded files go in the same snapshot.
    let reload = remove_reloaded(
        ctx,
        job,
        &target,
        q_target.as_ref(),
        &new.reloaded,
        &mut written,
    )
    .await?;
    tracing::debug!(table = %job.table, ms = clock.elapsed().as_millis() as u64, "files written");
    let (data_files, q_files) = (written.data_files, written.q_files);
    let staged = stage_snapshot(
        target,
        data_files,
        catalog.file_io(),
        props.clone(),
        reload.mode,
    )
    .await?;
    tracing::debug!(table = %job.table, ms = clock.elapsed().as_millis() as u64, "snapshot staged");
    let quarantine =
        stage_quarantine(q_target, q_files, catalog.file_io(), props, reload.q_mode).await?;
    Ok(IngestOutcome {
        table: job.table.clone(),
        staged: Some(staged),
        quarantine,
        current_snapshot,
        already_loaded,
        files: written.stats.into_iter().map(|(_, s)| s).collect(),
        reloaded: new.reloaded.len(),
        replaced_rows: reload.replaced_rows,
        rewritten_rows: reload.rewritten_rows,
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
        &job.docs,
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
    reloaded: &BTreeSet<String>,
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

/// The source files a run loads: new ones, and (with `--reload-changed`) changed ones.
struct NewFiles {
    /// In the order they were found.
    files: Vec<PathBuf>,
    /// Their ledger entries, in the same order.
    prints: Vec<ledger::LoadedFile>,
    /// The ledger paths of the changed files loaded again.
    reloaded: BTreeSet<String>,
}

/// The files of `files` that the ledger of `target` has not recorded (fingerprinted on a
/// blocking thread). A recorded file whose content changed is an error, unless the run
/// reloads changed files.
async fn new_files_of(
    ctx: &JobContext,
    job: &IngestJob,
    target: &TableTarget,
    files: &[PathBuf],
) -> Result<NewFiles> {
    let ledger =
        ledger::loaded_files_with_checkpoint(&target.metadata, ctx.catalog.file_io()).await?;
    let mut new = NewFiles {
        files: Vec::new(),
        prints: Vec::new(),
        reloaded: BTreeSet::new(),
    };
    for Unloaded {
        path,
        print,
        loaded_as,
    } in unloaded_files(&ledger, &ctx.project_dir, files).await?
    {
        match loaded_as {
            None => {
                new.files.push(path);
                new.prints.push(print);
            }
            Some(_) if ctx.reload_changed => {
                new.reloaded.insert(print.path.clone());
                new.files.push(path);
                new.prints.push(print);
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
    Ok(new)
}

/// The file ledger of a snapshot as its summary property holds it (JSON).
fn ledger_json(prints: &[ledger::LoadedFile]) -> Result<String> {
    serde_json::to_string(prints)
        .map_err(|e| Error::Internal(format!("cannot encode the file ledger: {e}")))
}

/// Writes `files` as data files of `target` (bad records of `q_target`). Under
/// `schema_evolution = "add_columns"` the columns the files have and `evolved` lacks join
/// `evolved` and `target` (returned by name, in the order first seen). CSV headers are read
/// first. JSON Lines are loaded at once: a lane stops at the first record with a new key; the
/// rest of what the lanes did not read is scanned for new keys, the columns are added, and
/// the load goes on from there. The rows written before are exact under the wider schema (a
/// data file without a column reads NULL in it), so every file written is committed.
async fn write_evolving(
    ctx: &JobContext,
    live: Option<iceberg::table::Table>,
    evolved: &mut IngestJob,
    target: &mut TableTarget,
    q_target: Option<&TableTarget>,
    files: &[Part],
    progress: Arc<AtomicU64>,
) -> Result<(LaneOutput, Vec<String>)> {
    let catalog = &ctx.catalog;
    let adds = evolved.schema_evolution == SchemaEvolution::AddColumns;
    let at_once = adds && evolved.format == Format::Json;
    let mut added = Vec::new();
    if adds && !at_once {
        added = add_found_columns(catalog, live.clone(), evolved, target, files).await?;
    }
    let mut written = lanes::write_files(
        ctx,
        evolved,
        target,
        q_target,
        files,
        at_once,
        progress.clone(),
    )
    .await?;
    if !written.rest.is_empty() {
        let rest = std::mem::take(&mut written.rest);
        let (scanned, found) = scan_new_columns(evolved, &rest).await?;
        *evolved = scanned;
        // Field ids the files already written use must stay: a table this run creates is
        // widened as prepared; one that exists is prepared again from the catalog's.
        *target = match target.base_location {
            None => widen_unpublished(target, &bronze_columns(evolved), &evolved.docs)?,
            Some(_) => bronze_target(catalog, live, evolved).await?,
        };
        added = found;
        tracing::debug!(table = %evolved.table, files = rest.len(), "going on with the added columns");
        let more =
            lanes::write_files(ctx, evolved, target, q_target, &rest, false, progress).await?;
        written.absorb(more);
    }
    Ok((written, added))
}

/// Scans `files` for columns `evolved` does not declare; when there are some, adds them to
/// `evolved`, prepares `target` again for the wider columns and returns their names.
async fn add_found_columns(
    catalog: &PipelineCatalog,
    live: Option<iceberg::table::Table>,
    evolved: &mut IngestJob,
    target: &mut TableTarget,
    files: &[Part],
) -> Result<Vec<String>> {
    let (scanned, found) = scan_new_columns(evolved, files).await?;
    if !found.is_empty() {
        *evolved = scanned;
        *target = bronze_target(catalog, live, evolved).await?;
    }
    Ok(found)
}

/// `job` with the columns `files` have and it lacks (on a blocking thread), and their names.
async fn scan_new_columns(job: &IngestJob, files: &[Part]) -> Result<(IngestJob, Vec<String>)> {
    let (mut scanned, files) = (job.clone(), files.to_vec());
    let (scanned, found) = tokio::task::spawn_blocking(move || {
        evolve::add_new_columns(&mut scanned, &files).map(|found| (scanned, found))
    })
    .await
    .map_err(|e| Error::Internal(format!("scanning for new columns failed: {e}")))??;
    if !found.is_empty() {
        tracing::info!(table = %job.table, columns = %found.join(", "), "adding columns found in the source files (schema_evolution = \"add_columns\")");
    }
    Ok((scanned, found))
}

/// The quarantine table of `job` prepared for an append, when bad records go to quarantine.
async fn quarantine_target(
    catalog: &PipelineCatalog,
    job: &IngestJob,
) -> Result<Option<TableTarget>> {
    Ok(match job.on_bad_record {
        BadRecordPolicy::Quarantine => Some(
            prepare_target(
                catalog,
                &job.table.quarantine(),
                &quarantine_columns(),
                &[],
                &Default::default(),
                &Evolution::Append { declared_in: None },
            )
            .await?,
        ),
        BadRecordPolicy::Fail => None,
    })
}

/// How the snapshots of a run write, and the rows `--reload-changed` replaced.
struct Reload {
    mode: WriteMode,
    q_mode: WriteMode,
    replaced_rows: u64,
    rewritten_rows: u64,
}

/// With reloaded files, removes their old rows from `target` (and `q_target`): the rewritten
/// files join `written` and the snapshots rewrite the files that held the rows. Without,
/// both snapshots append.
async fn remove_reloaded(
    ctx: &JobContext,
    job: &IngestJob,
    target: &TableTarget,
    q_target: Option<&TableTarget>,
    reloaded: &BTreeSet<String>,
    written: &mut LaneOutput,
) -> Result<Reload> {
    if reloaded.is_empty() {
        return Ok(Reload {
            mode: WriteMode::Append,
            q_mode: WriteMode::Append,
            replaced_rows: 0,
            rewritten_rows: 0,
        });
    }
    let removal = remove_old_rows(ctx, job, target, "_source_file", reloaded).await?;
    tracing::info!(table = %job.table, rows = removal.rows, files = ?reloaded, "reloading changed files");
    let replaced_rows = removal.rows;
    let rewritten_rows = removal.rewritten.iter().map(|f| f.record_count()).sum();
    written.data_files.extend(removal.rewritten);
    let q_mode = match q_target {
        Some(t) => {
            let q = remove_old_rows(ctx, job, t, "source_file", reloaded).await?;
            written.q_files.extend(q.rewritten);
            WriteMode::Rewrite(q.deleted)
        }
        None => WriteMode::Append,
    };
    Ok(Reload {
        mode: WriteMode::Rewrite(removal.deleted),
        q_mode,
        replaced_rows,
        rewritten_rows,
    })
}

/// The staged snapshot of the quarantine table; `None` without one, or when nothing changes.
async fn stage_quarantine(
    q_target: Option<TableTarget>,
    q_files: Vec<DataFile>,
    file_io: &iceberg::io::FileIO,
    props: HashMap<String, String>,
    q_mode: WriteMode,
) -> Result<Option<StagedTable>> {
    Ok(match q_target {
        // A quarantine snapshot only when something changes (or the table is new).
        Some(t)
            if !q_files.is_empty() || t.base_location.is_none() || q_mode != WriteMode::Append =>
        {
            Some(stage_snapshot(t, q_files, file_io, props, q_mode).await?)
        }
        _ => None,
    })
}
