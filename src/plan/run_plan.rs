//! `pipeline run --plan`: what the next run would do, job by job, from the catalog and the
//! landing files as they are now: which source files each ingest would load, which
//! transforms would run and why, the partitions each would replace, and what it would read.
//! Nothing is written.
//!
//! What a plan cannot know without loading the files: the partitions new source rows fall
//! in. A transform that replaces partitions by an input whose new rows are still to be
//! loaded says so ("and the partitions the new rows of bronze.x fall in, by order_ts").

use std::collections::{HashMap, HashSet};

use iceberg::table::Table;
use serde::Serialize;

use super::backfill::jobs_in_scope;
use super::backfill_plan::{follow, input_read, PlannedInput};
use super::graph::JobId;
use super::scope::{decide, Scope};
use super::select::Selector;
use super::validate::{validate, Validated};
use crate::error::Result;
use crate::ingest::pending_files;
use crate::spec::{IngestJob, Pipeline, TableName, TransformJob, TransformMode};

/// What a run would be asked to do.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub full_refresh: bool,
    pub reload_changed: bool,
    pub select: Vec<Selector>,
}

/// One job of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedJob {
    pub table: String,
    /// `ingest` or `transform`.
    pub job: &'static str,
    /// Whether the run would write a new snapshot of the table.
    pub runs: bool,
    /// What it would do and why: `load 2 new files (...)`, `nothing new`, `replace ...`,
    /// `full refresh (why)`, `up to date`, `not selected`, or `fails: ...`.
    pub action: String,
    /// An ingest's files to load, as the ledger names them, with their bytes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<(String, u64)>,
    /// A transform's inputs and how much of each it would read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<PlannedInput>,
}

impl PlannedJob {
    /// The plan of a job `--select` leaves out: it writes nothing.
    fn not_selected(table: &TableName, job: &'static str) -> PlannedJob {
        PlannedJob {
            table: table.to_string(),
            job,
            runs: false,
            action: "not selected".into(),
            files: Vec::new(),
            inputs: Vec::new(),
        }
    }
}

/// How a table would change: a scope, plus the inputs whose new rows (not loaded yet)
/// decide more partitions.
#[derive(Debug, Clone)]
struct Change {
    scope: Scope,
    new_rows_of: Vec<TableName>,
}

impl Change {
    fn runs(&self) -> bool {
        self.scope != Scope::UpToDate || !self.new_rows_of.is_empty()
    }
}

/// Plans the next run of `pipeline` asked as `request`.
pub async fn plan_run(pipeline: &Pipeline, request: &RunRequest) -> Result<Vec<PlannedJob>> {
    let validated = validate(pipeline).await?;
    let in_scope = jobs_in_scope(&validated.graph, pipeline, None, &request.select)?;
    let mut changes: HashMap<TableName, Change> = HashMap::new();
    let mut planned = Vec::new();
    for job_id in &validated.graph.order {
        let selected = in_scope.contains(job_id);
        let job = match *job_id {
            JobId::Ingest(i) => {
                let job = &validated.ingests[i];
                plan_ingest(pipeline, &validated, job, request, selected, &mut changes).await?
            }
            JobId::Transform(i) => {
                let plan = TransformPlan {
                    validated: &validated,
                    job: &pipeline.transforms[i],
                    inputs: &validated.graph.transforms[i].inputs,
                    full_refresh: request.full_refresh,
                };
                plan.plan(selected, &mut changes).await?
            }
        };
        planned.push(job);
    }
    Ok(planned)
}

/// The plan of one ingest job; records its table's change when it would load files.
async fn plan_ingest(
    pipeline: &Pipeline,
    validated: &Validated,
    job: &IngestJob,
    request: &RunRequest,
    selected: bool,
    changes: &mut HashMap<TableName, Change>,
) -> Result<PlannedJob> {
    let mut planned = PlannedJob::not_selected(&job.table, "ingest");
    if !selected {
        return Ok(planned);
    }
    let pending = pending_files(&validated.catalog, &pipeline.project_dir, job).await?;
    if !pending.changed.is_empty() && !request.reload_changed {
        let names: Vec<&str> = pending.changed.iter().map(|(p, _)| p.as_str()).collect();
        planned.action = format!(
            "fails: {} changed since loaded ({}); run with --reload-changed to replace their rows",
            plural(names.len(), "file"),
            names.join(", ")
        );
        return Ok(planned);
    }
    planned.files = pending.new.clone();
    if request.reload_changed {
        planned.files.extend(pending.changed.iter().cloned());
    }
    let bytes: u64 = planned.files.iter().map(|(_, b)| b).sum();
    planned.runs = !planned.files.is_empty() || !pending.table_exists;
    planned.action = match (planned.files.len(), pending.changed.len()) {
        (0, _) if pending.table_exists => "nothing new".into(),
        (0, _) => "create the table (no file matches yet)".into(),
        (n, 0) => format!("load {} ({bytes} bytes)", plural(n, "new file")),
        (n, c) => format!(
            "load {} ({bytes} bytes), {} of them changed (their old rows replaced)",
            plural(n, "file"),
            c
        ),
    };
    if planned.runs {
        let change = Change {
            scope: Scope::UpToDate,
            new_rows_of: vec![job.table.clone()],
        };
        changes.insert(job.table.quarantine(), change.clone());
        changes.insert(job.table.clone(), change);
    }
    Ok(planned)
}

/// One transform to plan.
struct TransformPlan<'a> {
    validated: &'a Validated,
    job: &'a TransformJob,
    inputs: &'a [TableName],
    full_refresh: bool,
}

impl TransformPlan<'_> {
    /// The plan of the transform; records its table's change when it would run.
    async fn plan(
        &self,
        selected: bool,
        changes: &mut HashMap<TableName, Change>,
    ) -> Result<PlannedJob> {
        let job = self.job;
        let mut planned = PlannedJob::not_selected(&job.table, "transform");
        if !selected {
            return Ok(planned);
        }
        let mut current: Vec<(TableName, Table)> = Vec::new();
        let mut upstream: Vec<(TableName, Change)> = Vec::new();
        for input in self.inputs {
            if let Some(change) = changes.get(input) {
                upstream.push((input.clone(), change.clone()));
                continue;
            }
            let table = match self.validated.external.get(input) {
                Some(t) => Some(t.clone()),
                None => self.validated.catalog.load(input).await?,
            };
            match table {
                Some(table) => current.push((input.clone(), table)),
                None => {
                    planned.action = format!(
                        "fails: its input {input} does not exist yet (select its job too, e.g. --select +{})",
                        job.table
                    );
                    return Ok(planned);
                }
            }
        }
        let table = self.validated.catalog.load(&job.table).await?;
        let own = decide(
            job,
            table.as_ref().map(|t| t.metadata()),
            &current,
            None,
            self.full_refresh,
        )
        .await?;
        let change = combine(job, own, &upstream);
        planned.runs = change.runs();
        planned.action = describe(&change);
        if !planned.runs {
            return Ok(planned);
        }
        let unknown = !change.new_rows_of.is_empty() && !matches!(change.scope, Scope::Full(_));
        for (name, t) in &current {
            let mut read = input_read(job.range_column(name), &change.scope, name, t).await?;
            if unknown && job.range_column(name).is_some() {
                read.read = "range, with the partitions of the new rows".into();
                (read.files, read.bytes) = (None, None);
            }
            planned.inputs.push(read);
        }
        for (name, _) in &upstream {
            planned.inputs.push(PlannedInput {
                table: name.to_string(),
                read: "as this run changes it".into(),
                files: None,
                bytes: None,
            });
        }
        changes.insert(job.table.clone(), change);
        Ok(planned)
    }
}

/// The change of `job` given its own scope (from the inputs the run leaves alone) and the
/// inputs the run changes before it.
fn combine(job: &TransformJob, own: Scope, upstream: &[(TableName, Change)]) -> Change {
    let mut change = Change {
        scope: own,
        new_rows_of: Vec::new(),
    };
    let by_partition =
        job.mode == TransformMode::ReplacePartitions && job.time_partition().is_some();
    let mut seen: HashSet<TableName> = HashSet::new();
    for (input, up) in upstream {
        change.scope = follow(job, change.scope, input, &up.scope);
        if up.new_rows_of.is_empty() || matches!(change.scope, Scope::Full(_)) {
            continue;
        }
        if by_partition && job.range_column(input).is_some() {
            for t in &up.new_rows_of {
                if seen.insert(t.clone()) {
                    change.new_rows_of.push(t.clone());
                }
            }
        } else {
            change.scope = Scope::Full(format!("{input} changes"));
        }
    }
    if matches!(change.scope, Scope::Full(_)) {
        change.new_rows_of.clear();
    }
    change
}

/// A change as the plan says it.
fn describe(change: &Change) -> String {
    let new_rows = || {
        let names: Vec<String> = change.new_rows_of.iter().map(|t| t.to_string()).collect();
        format!(
            "the partitions the new rows of {} fall in",
            names.join(", ")
        )
    };
    match (&change.scope, change.new_rows_of.is_empty()) {
        (scope, true) => scope.describe(),
        (Scope::Range(range), false) => format!("replace {range} and {}", new_rows()),
        (_, false) => format!("replace {}", new_rows()),
    }
}

/// `n thing` or `n things`.
fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}
