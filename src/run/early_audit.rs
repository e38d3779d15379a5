//! Audits that start while a run's later jobs still run. An expectation is evaluated as soon
//! as its table (and a `relationships` check's other table) is staged and no job left in the
//! run will stage it again: on the same staged snapshots, with the same history, the audit step
//! would read, so the results are the same; they are reported, and a failed `fail`
//! expectation stops the run, at the audit step as before. A `sql` check may read any table:
//! it waits for the audit step.
//!
//! Only small checks start early: one that reads more than [`early_rows`] rows of its table
//! (the rows this run wrote when it looks at those only, else the whole table) waits for the
//! audit step too. Beside the gold jobs of a full 5M-order run, the `unique` check over 5M
//! keys doubled the peak RSS (583 -> 1162 MiB) and saved no time (the gold jobs keep both
//! cores busy); the checks of a one-month backfill (386k rows) take 0.14 s that the run
//! otherwise waits for after its last job.

use std::collections::{HashMap, HashSet};

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};

use crate::commit::StagedTable;
use crate::engine::memory_limit_mb;
use crate::error::{Error, Result};
use crate::operation::audit::{evaluate, EarlyResults};
use crate::plan::Validated;
use crate::spec::{Check, ExpectAction, Pipeline, TableName};

/// Rows a check may read to start early, per GiB of the memory pool
/// (`PIPELINE_MEMORY_LIMIT_MB`).
const EARLY_ROWS_PER_GIB: u64 = 1_000_000;

/// Rows a check may read to start early: `PIPELINE_EARLY_AUDIT_ROWS` (0: none starts early),
/// else [`EARLY_ROWS_PER_GIB`] per GiB of the process's memory pool.
fn early_rows() -> u64 {
    std::env::var("PIPELINE_EARLY_AUDIT_ROWS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| EARLY_ROWS_PER_GIB.saturating_mul(memory_limit_mb() as u64) / 1024)
}

/// The early audits of one run: started, running, and what they found.
pub(crate) struct EarlyAudits<'a> {
    pipeline: &'a Pipeline,
    validated: &'a Validated,
    run_id: String,
    started_micros: i64,
    /// Rows a check may read to start early (0: none does).
    budget: u64,
    /// Indexes of the expectations started.
    started: HashSet<usize>,
    running: FuturesUnordered<BoxFuture<'a, Result<EarlyResults>>>,
    results: EarlyResults,
    error: Option<Error>,
}

impl<'a> EarlyAudits<'a> {
    /// No audit started yet, for run `run_id` started at `started_micros`; with `enabled`,
    /// checks of at most [`early_rows`] rows start early, else none does.
    pub fn new(
        pipeline: &'a Pipeline,
        validated: &'a Validated,
        run_id: &str,
        started_micros: i64,
        enabled: bool,
    ) -> EarlyAudits<'a> {
        EarlyAudits {
            pipeline,
            validated,
            run_id: run_id.to_string(),
            started_micros,
            budget: if enabled { early_rows() } else { 0 },
            started: HashSet::new(),
            running: FuturesUnordered::new(),
            results: Vec::new(),
            error: None,
        }
    }

    /// Starts (as one audit, on every table of `staged`) every expectation not started yet
    /// whose table is in `staged` and whose tables are not `pending` (a job still to finish
    /// writes them).
    pub fn start_ready(
        &mut self,
        pending: &HashSet<TableName>,
        staged: &HashMap<TableName, StagedTable>,
    ) {
        if self.budget == 0 {
            return;
        }
        let mut which = Vec::new();
        for (i, e) in self.pipeline.expectations.iter().enumerate() {
            if self.started.contains(&i)
                || e.action == ExpectAction::Drop
                || matches!(e.check, Check::Sql { .. })
                || !staged.contains_key(&e.table)
            {
                continue;
            }
            let mut needs = vec![&e.table];
            if let Check::Relationships { to_table, .. } = &e.check {
                needs.push(to_table);
            }
            if needs.iter().any(|t| pending.contains(*t)) {
                continue;
            }
            self.started.insert(i);
            which.push(i);
        }
        if which.is_empty() {
            return;
        }
        let (pipeline, validated, started) = (self.pipeline, self.validated, self.started_micros);
        let run_id = self.run_id.clone();
        let budget = Some(self.budget);
        // Every table staged so far: an anomaly names its causes in the upstream tables this
        // run loaded, all staged before (their jobs are done).
        let staged: Vec<StagedTable> = staged.values().cloned().collect();
        self.running.push(Box::pin(async move {
            let results =
                evaluate(pipeline, validated, &staged, which, &run_id, started, budget).await?;
            for (_, r) in &results {
                tracing::info!(table = %r.table, check = %r.name, "audited early, while later jobs run");
            }
            Ok(results)
        }));
    }

    /// Whether an audit is running.
    pub fn is_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// Waits for the next audit to finish and keeps what it found.
    pub async fn next(&mut self) {
        match self.running.next().await {
            Some(Ok(results)) => self.results.extend(results),
            Some(Err(e)) => {
                self.error.get_or_insert(e);
            }
            None => {}
        }
    }

    /// Waits for every audit; their results, or the first error one met.
    pub async fn finish(mut self) -> Result<EarlyResults> {
        while self.is_running() {
            self.next().await;
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.results),
        }
    }
}
