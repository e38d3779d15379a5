//! One transform job of a run: its inputs read (staged versions of tables this run changed,
//! ranged scans for inputs in `incremental_by`), its scope decided, its query run and staged.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use datafusion::common::DFSchema;
use datafusion::prelude::SessionContext;
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::table::Table;

use super::options::RunOptions;
use crate::cluster::{cluster_session, cluster_table};
use crate::commit::summary::total_records;
use crate::commit::{JobContext, PartitionRange, StagedTable};
use crate::engine::{new_session, register_table, remote_scheme, table_provider, CountedTable};
use crate::error::{Error, Result};
use crate::lineage::snapshot_renames;
use crate::plan::{batch_rows, batches, decide, scope_properties, Batch, Forced, Scope};
use crate::spec::{BallistaEngine, Engine, TableName, TransformJob};
use crate::transform::{
    logical_plan, null_predicate, range_predicate, run_transform, sorts_all_rows, ParsedTransform,
    Query, TransformFacts, TransformOutcome,
};

/// Which rows of the `incremental_by` inputs a session reads (the other inputs are read whole).
#[derive(Clone, Copy)]
enum Rows<'a> {
    All,
    /// Those whose time column lies in the range.
    In(&'a PartitionRange),
    /// Those whose time column is NULL.
    Null,
}

/// One transform job of a run, with what it needs to read its inputs.
pub(super) struct TransformRun<'a> {
    pub ctx: &'a JobContext,
    pub job: &'a TransformJob,
    pub parsed: &'a ParsedTransform,
    /// Tables read but not produced by the pipeline, pinned at their validated snapshot.
    pub external: &'a HashMap<TableName, Table>,
    /// Tables this run staged so far (its inputs among them are read as staged).
    pub staged: &'a Mutex<HashMap<TableName, StagedTable>>,
    pub options: &'a RunOptions,
    /// Where its query runs.
    pub engine: &'a Engine,
}

/// What a transform job left for the publish.
pub(super) enum TransformDone {
    /// Its inputs and SQL are as the table's last run saw them: no new snapshot.
    UpToDate {
        table: TableName,
        snapshot: Option<i64>,
    },
    /// Its table (and quarantine table) staged as `scope` says.
    Staged {
        table: Box<StagedTable>,
        /// Its quarantine table, when `drop` expectations apply.
        quarantine: Option<Box<StagedTable>>,
        /// Rows dropped, per expectation name.
        dropped: BTreeMap<String, u64>,
        /// Rows of its input tables.
        rows_in: u64,
        scope: Scope,
        /// Where its query ran (`Engine::describe`).
        engine: String,
    },
}

impl TransformRun<'_> {
    /// A session of this process with `inputs` registered (those in `incremental_by` read
    /// for the rows `rows` says).
    async fn local_session(
        &self,
        inputs: &[(TableName, Table)],
        rows: Rows<'_>,
    ) -> Result<SessionContext> {
        let session = new_session();
        for (name, table) in inputs {
            let records = total_records(table.metadata().current_snapshot());
            let provider = table_provider(table.clone(), None)
                .await
                .map_err(|e| Error::table(name, "cannot read table", e))?;
            let provider = match (rows, self.job.range_column(name)) {
                (Rows::All, _) | (_, None) => provider,
                (rows, Some(column)) => {
                    let df = session.read_table(provider)?;
                    let predicate = match rows {
                        Rows::In(range) => range_predicate(df.schema(), column, &range.spans())?,
                        _ => null_predicate(df.schema(), column)?,
                    };
                    df.filter(predicate)?.into_view()
                }
            };
            register_table(
                &session,
                name,
                Arc::new(CountedTable::new(provider, records)),
            )?;
        }
        Ok(session)
    }

    /// The sessions of a recompute in batches (`plan::batches`; with `range`, of those
    /// partitions), each with its input rows: when the query runs here and sorts all its rows
    /// (`whole`, the session of the whole recompute, plans it), and its inputs make two
    /// batches or more. `None`: it runs as one query.
    async fn batch_sessions(
        &self,
        whole: &SessionContext,
        inputs: &[(TableName, Table)],
        range: Option<&PartitionRange>,
        facts: &TransformFacts,
    ) -> Result<Option<Vec<(SessionContext, u64)>>> {
        // A batch is a run of whole partitions: one partition is one query.
        if facts.on_cluster || range.is_some_and(|r| r.units.len() < 2) {
            return Ok(None);
        }
        if !sorts_all_rows(&logical_plan(whole, self.job, self.parsed).await?) {
            return Ok(None);
        }
        let max_rows = batch_rows(self.job);
        let Some(batches) = batches(self.job, inputs, range, max_rows).await? else {
            return Ok(None);
        };
        tracing::info!(
            table = %self.job.table,
            "{} is recomputed in {} batches of at most about {max_rows} input rows",
            self.job.table,
            batches.len(),
        );
        let mut sessions = Vec::with_capacity(batches.len());
        for batch in &batches {
            sessions.push(match batch {
                Batch::Range { range, rows } => {
                    (self.local_session(inputs, Rows::In(range)).await?, *rows)
                }
                Batch::Nulls => (self.local_session(inputs, Rows::Null).await?, 0),
            });
        }
        Ok(Some(sessions))
    }

    /// A client session of `cluster` with `inputs` registered as their data files (those in
    /// `incremental_by` for `range` only: the files planned with the range, the rows
    /// filtered by it); `None`, after a warning saying why, when the cluster cannot read an
    /// input as Iceberg would or write the table (`target`, when it exists: its files and the
    /// inputs' must all be on S3, or in the embedded catalog's warehouse), and then the
    /// transform runs here, with the same result.
    async fn cluster_session(
        &self,
        cluster: &BallistaEngine,
        inputs: &[(TableName, Table)],
        target: Option<&Table>,
        range: Option<&PartitionRange>,
        input_rows: u64,
    ) -> Result<Option<SessionContext>> {
        let (ctx, job) = (self.ctx, self.job);
        let local = |why: String| {
            tracing::warn!(
                table = %job.table,
                "{} runs on this machine, not on the cluster: {why}",
                job.table
            );
            Ok(None)
        };
        let locations: Vec<&str> = inputs
            .iter()
            .map(|(_, t)| t.metadata().location())
            .chain(target.map(|t| t.metadata().location()))
            .collect();
        // Nothing known to be on S3 (no input, a new table) is not taken for S3.
        let on_s3 = !locations.is_empty()
            && locations
                .iter()
                .all(|location| remote_scheme(location).is_some());
        if ctx.catalog.local_warehouse().is_none() && !on_s3 {
            return local(format!(
                "a cluster reads and writes a {} catalog's files only on S3 or the embedded catalog's warehouse (a local file system every node shares)",
                ctx.catalog.kind()
            ));
        }
        let name = format!("{} {} {}", ctx.pipeline, ctx.run_id, job.table);
        let partitions = cluster.partitions_for(input_rows);
        let session = cluster_session(&cluster.url, &name, partitions).await?;
        for (input, table) in inputs {
            let filter = match (range, job.range_column(input)) {
                (Some(range), Some(column)) => {
                    let schema = schema_to_arrow_schema(table.metadata().current_schema())
                        .map_err(|e| Error::table(input, "cannot read table", e))?;
                    let schema = DFSchema::try_from(schema)?;
                    Some(range_predicate(&schema, column, &range.spans())?)
                }
                _ => None,
            };
            let provider = match cluster_table(table, filter.as_ref(), partitions).await? {
                Ok(provider) => provider,
                Err(why) => return local(format!("{input}: {why}")),
            };
            let provider = match filter {
                Some(filter) => session.read_table(provider)?.filter(filter)?.into_view(),
                None => provider,
            };
            register_table(&session, input, provider)?;
        }
        Ok(Some(session))
    }

    /// Each input table as this run reads it: staged by an earlier job of the run, external,
    /// or as the catalog has it.
    async fn inputs(&self) -> Result<Vec<(TableName, Table)>> {
        let catalog = &self.ctx.catalog;
        let mut inputs = Vec::new();
        for input in &self.parsed.inputs {
            let staged_input = self.staged.lock().expect("staged lock").get(input).cloned();
            let table = match staged_input {
                Some(s) => s.reader(catalog.file_io())?,
                // External, or produced by this pipeline but unchanged in this run.
                None => match self.external.get(input) {
                    Some(t) => t.clone(),
                    None => catalog.load_existing(input).await?,
                },
            };
            inputs.push((input.clone(), table));
        }
        Ok(inputs)
    }

    /// The session the query runs in: a cluster's when the engine is Ballista and the job is
    /// big enough for it (`facts.on_cluster` says), else a local one.
    async fn session(
        &self,
        inputs: &[(TableName, Table)],
        target: Option<&Table>,
        range: Option<&PartitionRange>,
        facts: &mut TransformFacts,
    ) -> Result<SessionContext> {
        let cluster = match self.engine {
            Engine::Ballista(cluster) => {
                self.cluster_session(cluster, inputs, target, range, facts.input_rows)
                    .await?
            }
            Engine::Local => None,
        };
        facts.on_cluster = cluster.is_some();
        match cluster {
            Some(session) => Ok(session),
            None => {
                let rows = range.map_or(Rows::All, Rows::In);
                self.local_session(inputs, rows).await
            }
        }
    }

    /// The partitions a backfill that selects this job's table forces it to recompute.
    fn forced(&self) -> Option<Forced> {
        let backfill = self.options.backfill.as_ref()?;
        backfill.tables.contains(&self.job.table).then_some(Forced {
            from: backfill.from,
            to: backfill.to,
        })
    }

    /// What the run knows about the job beyond its spec: the inputs it reads (their snapshots
    /// and rows, the columns this run renames in them) and its table as it is (`current`).
    fn facts(&self, inputs: &[(TableName, Table)], current: Option<Table>) -> TransformFacts {
        let mut facts = TransformFacts {
            properties: scope_properties(self.job, inputs).into_iter().collect(),
            input_rows: inputs
                .iter()
                .map(|(_, t)| total_records(t.metadata().current_snapshot()))
                .sum(),
            target: current,
            ..TransformFacts::default()
        };
        // Input columns this run renames (a staged input's snapshot against its parent).
        for (name, table) in inputs {
            if self.staged.lock().expect("staged lock").contains_key(name) {
                facts
                    .renames
                    .extend(snapshot_renames(name, table.metadata()));
            }
        }
        facts
    }

    /// Decides the job's scope (see [`crate::plan::scope`]) and runs it; `counter` counts the
    /// rows it writes.
    pub async fn run(&self, counter: Arc<AtomicU64>) -> Result<TransformDone> {
        let (ctx, job) = (self.ctx, self.job);
        let inputs = self.inputs().await?;
        let current = ctx.catalog.load(&job.table).await?;
        let forced = self.forced();
        let mut scope = decide(
            job,
            current.as_ref().map(|t| t.metadata()),
            &inputs,
            forced,
            self.options.full_refresh,
        )
        .await?;
        if scope == Scope::UpToDate {
            return Ok(TransformDone::UpToDate {
                table: job.table.clone(),
                snapshot: current.and_then(|t| t.metadata().current_snapshot_id()),
            });
        }
        let mut facts = self.facts(&inputs, current.clone());
        loop {
            let range = match &scope {
                Scope::Range(r) => Some(r),
                _ => None,
            };
            let rows_in = facts.input_rows;
            let session = self
                .session(&inputs, current.as_ref(), range, &mut facts)
                .await?;
            // A nightly run's range (the partitions new rows fall in) is one query: looking
            // for batches reads every manifest of the inputs, a cost that grows with history.
            let batches = match (&scope, &self.options.backfill) {
                (Scope::Full(_), _) | (Scope::Range(_), Some(_)) => {
                    self.batch_sessions(&session, &inputs, range, &facts)
                        .await?
                }
                _ => None,
            };
            let queries = queries(&session, rows_in, batches.as_deref());
            let outcome = run_transform(
                ctx,
                &queries,
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
                    return Ok(TransformDone::Staged {
                        table,
                        quarantine,
                        dropped,
                        rows_in,
                        scope,
                        engine: match (facts.on_cluster, &batches) {
                            (true, _) => self.engine.describe(),
                            (false, None) => Engine::Local.describe(),
                            (false, Some(b)) => {
                                format!("{} in {} batches", Engine::Local.describe(), b.len())
                            }
                        },
                    })
                }
                TransformOutcome::NeedsFullRefresh => {
                    scope = Scope::Full("the table is new or its schema changes".into());
                }
            }
        }
    }
}

/// The queries of a job: one per batch session (each with its input rows), or `whole` alone.
fn queries<'s>(
    whole: &'s SessionContext,
    input_rows: u64,
    batches: Option<&'s [(SessionContext, u64)]>,
) -> Vec<Query<'s>> {
    match batches {
        Some(batches) => batches
            .iter()
            .map(|(session, input_rows)| Query {
                session,
                input_rows: *input_rows,
            })
            .collect(),
        None => vec![Query {
            session: whole,
            input_rows,
        }],
    }
}
