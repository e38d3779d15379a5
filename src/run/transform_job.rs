//! One transform job of a run: its inputs read (staged versions of tables this run changed,
//! ranged scans for inputs in `incremental_by`), its scope decided, its query run and staged.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use iceberg::table::Table;

use super::options::RunOptions;
use crate::commit::summary::total_records;
use crate::commit::{JobContext, StagedTable};
use crate::engine::{new_session, register_table, table_provider, CountedTable};
use crate::error::{Error, Result};
use crate::lineage::snapshot_renames;
use crate::plan::{decide, scope_properties, Forced, Scope};
use crate::spec::{TableName, TransformJob};
use crate::transform::{
    range_predicate, run_transform, ParsedTransform, TransformFacts, TransformOutcome,
};

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
    },
}

impl TransformRun<'_> {
    /// Decides the job's scope (see [`crate::plan::scope`]) and runs it; `counter` counts the
    /// rows it writes.
    pub async fn run(&self, counter: Arc<AtomicU64>) -> Result<TransformDone> {
        let (ctx, job) = (self.ctx, self.job);
        let mut inputs = Vec::new();
        for input in &self.parsed.inputs {
            let staged_input = self.staged.lock().expect("staged lock").get(input).cloned();
            let table = match staged_input {
                Some(s) => s.reader(ctx.catalog.file_io())?,
                // External, or produced by this pipeline but unchanged in this run.
                None => match self.external.get(input) {
                    Some(t) => t.clone(),
                    None => ctx.catalog.load_existing(input).await?,
                },
            };
            inputs.push((input.clone(), table));
        }
        let current = ctx.catalog.load(&job.table).await?;
        let forced = self.options.backfill.as_ref().and_then(|b| {
            b.tables.contains(&job.table).then_some(Forced {
                from: b.from,
                to: b.to,
            })
        });
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
        let mut facts = TransformFacts {
            properties: scope_properties(job, &inputs).into_iter().collect(),
            input_rows: inputs
                .iter()
                .map(|(_, t)| total_records(t.metadata().current_snapshot()))
                .sum(),
            ..TransformFacts::default()
        };
        // Input columns this run renames (a staged input's snapshot against its parent).
        for (name, table) in &inputs {
            if self.staged.lock().expect("staged lock").contains_key(name) {
                facts
                    .renames
                    .extend(snapshot_renames(name, table.metadata()));
            }
        }
        loop {
            let range = match &scope {
                Scope::Range(r) => Some(r),
                _ => None,
            };
            let session = new_session();
            let rows_in = facts.input_rows;
            for (name, table) in &inputs {
                let rows = total_records(table.metadata().current_snapshot());
                let provider = table_provider(table.clone(), None)
                    .await
                    .map_err(|e| Error::table(name, "cannot read table", e))?;
                // Inputs declared in incremental_by are read for the range only.
                let provider = match (range, job.range_column(name)) {
                    (Some(range), Some(column)) => {
                        let df = session.read_table(provider)?;
                        let predicate = range_predicate(df.schema(), column, &range.spans())?;
                        df.filter(predicate)?.into_view()
                    }
                    _ => provider,
                };
                register_table(&session, name, Arc::new(CountedTable::new(provider, rows)))?;
            }
            let outcome = run_transform(
                ctx,
                &session,
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
                    })
                }
                TransformOutcome::NeedsFullRefresh => {
                    scope = Scope::Full("the table is new or its schema changes".into());
                }
            }
        }
    }
}
