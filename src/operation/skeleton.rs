//! The one function every table-changing command runs ([`operate`]), and what a command says
//! to it ([`TableOperation`]): what to stage and how to describe its record. The skeleton owns
//! the order, so no command can skip a step or take them in another order:
//!
//! ```text
//!  lock      the pipeline's run lock, or every pipeline's of the project (a command that
//!            deletes files), keyed by `[pipeline] name`; none when the caller holds them
//!  recover   a publish an earlier command left half done completed or undone; a pipeline
//!            validated against its catalog again when tables moved meanwhile       (open.rs)
//!  stage     the command's changes written and staged; nothing visible   (TableOperation::stage)
//!  audit     the pipeline's expectations on the staged tables, when they are a pipeline's
//!            jobs' (a run, an erase); a failed `fail` stops here                  (audit.rs)
//!  record    the run record: id, kind, pipeline, who and why, quality; the command adds
//!            its part                                                (TableOperation::describe)
//!  publish   every change with the record in one catalog commit; when another writer moved
//!            a table first, the command rebases or rebuilds it and the commit is tried again
//!            (ATTEMPTS, with backoff), or it fails naming the table, nothing published
//!  finish    what the command does once published, still under the locks (replace landing
//!            files, delete freed files, maintain after a run)        (TableOperation::finish)
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::audit::audit_staged;
use super::open::{lock_and_recover, lock_project_and_recover, open, refuse_outside_warehouse};
use super::open::{Held, Scope};
use super::report::Observer;
use super::staged_tables::StagedTables;
use crate::catalog::PipelineCatalog;
use crate::commit::publish::{publisher, Publication, PublishOutcome};
use crate::commit::StagedTable;
use crate::error::{Error, Result};
use crate::plan::Validated;
use crate::records::lock::LockWait;
use crate::records::{new_run_id, Invocation, RunKind, RunRecord};
use crate::spec::{Pipeline, TableName};

/// How an operation takes its locks before it reads any table.
pub enum Opening<'a> {
    /// Validate `pipeline` against its catalog, take the locks `scope` says, recover, validate
    /// again when tables moved, refuse tables outside the warehouse (a run, an erase).
    Validated {
        pipeline: &'a Pipeline,
        scope: Scope,
    },
    /// Take pipeline `pipeline`'s run lock on `catalog` and recover (a rollback, a row change,
    /// a failed tick's record).
    Pipeline {
        catalog: &'a PipelineCatalog,
        pipeline: &'a str,
    },
    /// Take every pipeline's lock of `pipeline`'s project, recover, refuse tables outside the
    /// warehouse (maintenance: it deletes files).
    Project {
        catalog: &'a PipelineCatalog,
        pipeline: &'a Pipeline,
    },
    /// The caller already holds the locks and recovered (maintenance after a run, under the
    /// run's locks).
    Held { catalog: &'a PipelineCatalog },
}

/// The catalog an operation works on: the validated pipeline's, or the caller's.
pub enum CatalogRef<'a> {
    Shared(Arc<PipelineCatalog>),
    Borrowed(&'a PipelineCatalog),
}

impl std::ops::Deref for CatalogRef<'_> {
    type Target = PipelineCatalog;
    fn deref(&self) -> &PipelineCatalog {
        match self {
            CatalogRef::Shared(c) => c,
            CatalogRef::Borrowed(c) => c,
        }
    }
}

/// An operation's locks taken and its catalog ready.
pub struct Opened<'a> {
    pub catalog: CatalogRef<'a>,
    /// The pipeline validated against the catalog (`Opening::Validated` only).
    pub validated: Option<Validated>,
    /// The locks taken; `None` when the caller holds them (`Opening::Held`).
    pub lock: Option<Held>,
}

/// Who the operation's record says ran it, and for which pipeline.
pub struct Identity<'a> {
    pub kind: RunKind,
    pub pipeline: &'a str,
    pub invocation: &'a Invocation,
    /// The run id to use; a new one when `None`.
    pub run_id: Option<String>,
    /// When the run started, if before this operation (a failed tick's record); now when
    /// `None`.
    pub started: Option<DateTime<Utc>>,
}

impl<'a> Identity<'a> {
    /// A new run of `kind`, started now.
    pub fn new(kind: RunKind, pipeline: &'a str, invocation: &'a Invocation) -> Identity<'a> {
        Identity {
            kind,
            pipeline,
            invocation,
            run_id: None,
            started: None,
        }
    }
}

impl Opened<'_> {
    /// The pipeline validated against the catalog: there for an `Opening::Validated`
    /// operation (`what` names it for the internal error otherwise).
    pub fn validated(&self, what: &str) -> Result<&Validated> {
        self.validated
            .as_ref()
            .ok_or_else(|| Error::Internal(format!("{what} without its validated pipeline")))
    }
}

/// The run an operation is: its id and when it started.
#[derive(Debug, Clone)]
pub struct RunStart {
    pub run_id: String,
    pub started: DateTime<Utc>,
}

/// Publish attempts before an operation gives up on a table other writers keep moving.
pub const ATTEMPTS: u32 = 5;

/// What `stage` found to do.
pub enum Staging<S, O> {
    /// Changes staged, to audit, record and publish.
    Publish(S),
    /// Nothing to publish: the operation is done with this output (a tick already served, no
    /// row matched).
    Done(O),
}

/// A pipeline's jobs' staged tables, for the audit: the tables and the rows each job's
/// expectations dropped.
pub struct ToAudit<'s> {
    pub tables: &'s [StagedTable],
    /// Results of expectations already evaluated (while later jobs ran), by index in the
    /// pipeline's expectations; the audit step evaluates the others.
    pub early: &'s [(usize, crate::records::QualityResult)],
    pub dropped: &'s std::collections::HashMap<TableName, std::collections::BTreeMap<String, u64>>,
}

/// A command that changes tables, as the skeleton runs it (see the module doc).
pub trait TableOperation<'a>: Send {
    /// What `stage` leaves for the publish.
    type Staged: Send;
    /// What the command returns.
    type Output: Send;

    /// Whose locks, and whether the pipeline is validated first.
    fn opening(&self) -> Opening<'a>;
    /// How long to wait for another command holding the locks: an hour by default (a
    /// command a person runs waits out a nightly run).
    fn wait(&self) -> LockWait {
        LockWait(Some(Duration::from_secs(3600)))
    }
    /// The record's kind, pipeline, invocation (and run id, when given).
    fn identity(&self) -> Identity<'_>;

    /// Stages every change of the operation under its locks; nothing is visible to readers.
    fn stage(
        &mut self,
        opened: &Opened<'a>,
        run: &RunStart,
        observer: &Arc<dyn Observer>,
    ) -> impl Future<Output = Result<Staging<Self::Staged, Self::Output>>> + Send;

    /// The staged tables to audit with the pipeline's expectations; `None` (the default) when
    /// the operation stages no pipeline job's output.
    fn to_audit<'s>(&self, _staged: &'s Self::Staged) -> Option<ToAudit<'s>> {
        None
    }

    /// The operation's part of its record (an erase's receipt, a tick, what is rolled back).
    fn describe(&self, record: RunRecord, _staged: &Self::Staged) -> RunRecord {
        record
    }

    /// The job-staged tables in `staged`, when that is what the operation publishes (a run, an
    /// erase): the default `publication` and `on_conflict` then publish them as they are and
    /// rebase each one another writer moved.
    fn staged_tables(_staged: &mut Self::Staged) -> Option<&mut StagedTables> {
        None
    }

    /// The changes of one publish attempt, with `record` (stamped for this attempt) given its
    /// tables. `None`: nothing left to change, nothing is published. By default, the
    /// operation's [`StagedTables`](Self::staged_tables).
    fn publication(
        &mut self,
        catalog: &PipelineCatalog,
        staged: &mut Self::Staged,
        record: RunRecord,
    ) -> impl Future<Output = Result<Option<Publication>>> + Send {
        async move {
            match Self::staged_tables(staged) {
                Some(tables) => Ok(Some(tables.publication(catalog, record).await?)),
                None => Err(Error::Internal("an operation without a publication".into())),
            }
        }
    }

    /// Another writer moved the tables of the changes at `conflicts` (indexes into
    /// `publication`, the attempt's) at attempt `attempt`: rebase or rebuild them for the next
    /// attempt, or fail (nothing is published). By default the operation's
    /// [`StagedTables`](Self::staged_tables) are rebased; an operation without them fails
    /// naming the first table (a rollback, a `sql` change: what they built cannot be rebased).
    fn on_conflict(
        &mut self,
        catalog: &PipelineCatalog,
        staged: &mut Self::Staged,
        publication: &Publication,
        conflicts: &[usize],
        attempt: u32,
        observer: &Arc<dyn Observer>,
    ) -> impl Future<Output = Result<()>> + Send {
        async move {
            match Self::staged_tables(staged) {
                Some(tables) => tables.rebase(catalog, conflicts, attempt, observer).await,
                None => Err(publication.conflict(conflicts)),
            }
        }
    }

    /// Once published (`record`: the published record) or once there was nothing to publish
    /// (`None`), still under the locks: the command's last steps and its output.
    fn finish(
        self,
        opened: Opened<'a>,
        staged: Self::Staged,
        record: Option<RunRecord>,
        observer: Arc<dyn Observer>,
    ) -> impl Future<Output = Result<Self::Output>> + Send;
}

/// Runs `operation`: lock, recover, stage, audit, record, publish (with retries), finish.
/// Either every change is published with the record in one catalog commit, or none is.
///
/// The future is boxed so its `Send` is proven once, here, for every operation (rustc cannot
/// yet prove it through a trait's lifetimes at each spawn, rust-lang/rust#100013).
pub fn operate<'a, O: TableOperation<'a> + 'a>(
    operation: O,
    observer: Arc<dyn Observer>,
) -> Pin<Box<dyn Future<Output = Result<O::Output>> + Send + 'a>> {
    Box::pin(steps(operation, observer))
}

/// The steps of [`operate`], in order.
async fn steps<'a, O: TableOperation<'a>>(
    mut operation: O,
    observer: Arc<dyn Observer>,
) -> Result<O::Output> {
    let opened = take_locks(operation.opening(), operation.wait(), observer.clone()).await?;
    let identity = operation.identity();
    let started = identity.started.unwrap_or_else(crate::fault::wall_now);
    let run = RunStart {
        run_id: identity.run_id.unwrap_or_else(|| new_run_id(started)),
        started,
    };
    let mut record = RunRecord::new(
        &run.run_id,
        identity.kind,
        identity.pipeline,
        started,
        identity.invocation,
    );
    let mut staged = match operation.stage(&opened, &run, &observer).await? {
        Staging::Publish(staged) => staged,
        Staging::Done(output) => return Ok(output),
    };
    if let Some(audited) = operation.to_audit(&staged) {
        if let (Opening::Validated { pipeline, .. }, Some(validated)) =
            (operation.opening(), &opened.validated)
        {
            let quality = audit_staged(
                pipeline,
                validated,
                audited.tables,
                audited.dropped,
                audited.early,
                &run.run_id,
                started.timestamp_micros(),
                observer.as_ref(),
            )
            .await?;
            record = record.with_quality(quality);
        }
        // Said once the checks passed: a run that fails them publishes nothing.
        observer.publishing(audited.tables.len());
    }
    let record = operation.describe(record, &staged);
    let published = publish(&mut operation, &opened, &mut staged, &record, &observer).await?;
    operation.finish(opened, staged, published, observer).await
}

/// The publish attempts: each stamps the record, asks the operation for its changes and
/// tries one commit; on a conflict the operation rebases (or fails) and, after a backoff, the
/// next attempt runs. Returns the published record, or `None` when nothing was left to change.
async fn publish<'a, O: TableOperation<'a>>(
    operation: &mut O,
    opened: &Opened<'a>,
    staged: &mut O::Staged,
    record: &RunRecord,
    observer: &Arc<dyn Observer>,
) -> Result<Option<RunRecord>> {
    let catalog: &PipelineCatalog = &opened.catalog;
    let publisher = publisher(catalog);
    for attempt in 1..=ATTEMPTS {
        // Stamped before the operation builds its changes: it finished when it was ready to
        // publish.
        let stamped = record.finished_now();
        let Some(publication) = operation.publication(catalog, staged, stamped).await? else {
            return Ok(None);
        };
        let conflicts = match publisher.try_publish(&publication).await? {
            PublishOutcome::Published(_) => return Ok(publication.record),
            PublishOutcome::Conflicts(conflicts) => conflicts,
        };
        if attempt == ATTEMPTS {
            return Err(Error::Conflict {
                table: publication.changes[conflicts[0]].table.to_string(),
                message: format!(
                    "other writers kept committing to it; gave up after {ATTEMPTS} attempts (nothing was changed)"
                ),
            });
        }
        operation
            .on_conflict(catalog, staged, &publication, &conflicts, attempt, observer)
            .await?;
        let backoff = 50u64 << attempt;
        let jitter = uuid::Uuid::new_v4().as_u128() as u64 % backoff;
        tokio::time::sleep(Duration::from_millis(backoff + jitter)).await;
    }
    Err(Error::Internal(format!(
        "publishing gave up after {ATTEMPTS} attempts without a conflict to report"
    )))
}

/// The lock and recovery steps `opening` asks for.
async fn take_locks<'a>(
    opening: Opening<'a>,
    wait: LockWait,
    observer: Arc<dyn Observer>,
) -> Result<Opened<'a>> {
    match opening {
        Opening::Validated { pipeline, scope } => {
            let opened = open(pipeline, wait, observer, scope).await?;
            Ok(Opened {
                catalog: CatalogRef::Shared(opened.validated.catalog.clone()),
                validated: Some(opened.validated),
                lock: Some(opened.lock),
            })
        }
        Opening::Pipeline { catalog, pipeline } => {
            let locked = lock_and_recover(catalog, pipeline, wait, observer).await?;
            Ok(Opened {
                catalog: CatalogRef::Borrowed(catalog),
                validated: None,
                lock: Some(locked.lock),
            })
        }
        Opening::Project { catalog, pipeline } => {
            let locked = lock_project_and_recover(catalog, pipeline, wait, observer).await?;
            refuse_outside_warehouse(catalog, pipeline).await?;
            Ok(Opened {
                catalog: CatalogRef::Borrowed(catalog),
                validated: None,
                lock: Some(locked.lock),
            })
        }
        Opening::Held { catalog } => Ok(Opened {
            catalog: CatalogRef::Borrowed(catalog),
            validated: None,
            lock: None,
        }),
    }
}
