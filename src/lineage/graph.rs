//! The lineage of a whole pipeline: every column of every table it writes, with where it
//! comes from (a transform's SELECT, a field of an ingest's source files, or the loader), and
//! every table column each transform's SQL uses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::query::{Derivation, QueryLineage, Use};
use crate::spec::{
    BadRecordPolicy, ColumnRef, Format, IngestJob, Pipeline, TableName, TransformJob,
    DROP_QUARANTINE_COLUMNS, LINEAGE_COLUMNS, QUARANTINE_COLUMNS,
};

/// Where a column's values come from.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnOrigin {
    /// Computed by a transform's SELECT (`expr`, in `sql_file`).
    Transform {
        sql_file: PathBuf,
        derivation: Derivation,
        expr: String,
    },
    /// A field of an ingest job's source files (the CSV header name or JSON key).
    SourceField {
        format: &'static str,
        paths: Vec<String>,
        field: String,
    },
    /// Filled in by the loader: `_source_file`, `_ingested_at`, quarantine columns.
    Loader { what: String },
}

/// Lineage of every column a pipeline writes.
#[derive(Debug, Clone, Default)]
pub struct PipelineLineage {
    pub origins: BTreeMap<ColumnRef, ColumnOrigin>,
    /// The columns of every table the pipeline writes, in table order.
    pub tables: BTreeMap<TableName, Vec<String>>,
    /// Per transform (by the table it writes): its SQL file and every table column it uses.
    pub uses: BTreeMap<TableName, (PathBuf, BTreeSet<Use>)>,
}

impl PipelineLineage {
    /// The columns `column` is computed from (empty for source fields and external tables).
    pub fn upstream(&self, column: &ColumnRef) -> Vec<ColumnRef> {
        match self.origins.get(column) {
            Some(ColumnOrigin::Transform { derivation, .. }) => {
                derivation.sources.iter().cloned().collect()
            }
            _ => Vec::new(),
        }
    }

    /// Columns computed from `column`, directly.
    pub fn downstream(&self, column: &ColumnRef) -> Vec<ColumnRef> {
        self.origins
            .iter()
            .filter(|(_, o)| {
                matches!(o, ColumnOrigin::Transform { derivation, .. } if derivation.sources.contains(column))
            })
            .map(|(c, _)| c.clone())
            .collect()
    }

    /// Every column computed from `column`, at any distance, nearest first.
    pub fn all_downstream(&self, column: &ColumnRef) -> Vec<ColumnRef> {
        reach(column, |c| self.downstream(c))
    }

    /// Every column `column` is computed from, at any distance, nearest first.
    pub fn all_upstream(&self, column: &ColumnRef) -> Vec<ColumnRef> {
        reach(column, |c| self.upstream(c))
    }
}

/// Every column reachable from `start` by `step`, breadth first, without `start`.
fn reach(start: &ColumnRef, step: impl Fn(&ColumnRef) -> Vec<ColumnRef>) -> Vec<ColumnRef> {
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    let mut queue = std::collections::VecDeque::from([start.clone()]);
    while let Some(c) = queue.pop_front() {
        for next in step(&c) {
            if next != *start && seen.insert(next.clone()) {
                order.push(next.clone());
                queue.push_back(next);
            }
        }
    }
    order
}

/// Assembles the lineage of `pipeline` from each transform's query lineage (by the table it
/// writes) and the columns of its ingest jobs `ingests` (with the columns schema evolution
/// added).
pub fn pipeline_lineage(
    pipeline: &Pipeline,
    ingests: &[IngestJob],
    queries: &BTreeMap<TableName, QueryLineage>,
) -> PipelineLineage {
    let mut out = PipelineLineage::default();
    for job in ingests {
        out.add_ingest(job);
    }
    for job in &pipeline.transforms {
        let Some(query) = queries.get(&job.table) else {
            continue;
        };
        out.add_transform(job, query);
    }
    out
}

impl PipelineLineage {
    /// Adds the columns of an ingest's bronze table (source fields, then the loader's
    /// lineage columns) and of its quarantine table when it has one.
    fn add_ingest(&mut self, job: &IngestJob) {
        let format = match job.format {
            Format::Csv => "csv",
            Format::Json => "json",
        };
        let declared: BTreeSet<&str> = job.columns.iter().map(|c| c.name.as_str()).collect();
        let mut names = Vec::new();
        let bronze = job
            .columns
            .iter()
            .map(|c| c.name.as_str())
            .chain(LINEAGE_COLUMNS);
        for name in bronze {
            let origin = if declared.contains(name) {
                ColumnOrigin::SourceField {
                    format,
                    paths: job.paths.clone(),
                    field: name.to_string(),
                }
            } else {
                ColumnOrigin::Loader {
                    what: loader_column(name).to_string(),
                }
            };
            self.origins
                .insert(ColumnRef::new(&job.table, name), origin);
            names.push(name.to_string());
        }
        self.tables.insert(job.table.clone(), names);
        if job.on_bad_record == BadRecordPolicy::Quarantine {
            let q = job.table.quarantine();
            let names: Vec<String> = QUARANTINE_COLUMNS.iter().map(|c| c.to_string()).collect();
            for name in &names {
                self.origins.insert(
                    ColumnRef::new(&q, name),
                    ColumnOrigin::Loader {
                        what: format!("a record of {} that failed to load", job.table),
                    },
                );
            }
            self.tables.insert(q, names);
        }
    }

    /// Adds the columns of a transform's table as its `query` computes them (and of its
    /// quarantine table when it has `drop` expectations), and the table columns its SQL uses.
    fn add_transform(&mut self, job: &TransformJob, query: &QueryLineage) {
        let mut names = Vec::new();
        for (name, derivation, expr) in &query.outputs {
            self.origins.insert(
                ColumnRef::new(&job.table, name),
                ColumnOrigin::Transform {
                    sql_file: job.sql_file.clone(),
                    derivation: derivation.clone(),
                    expr: expr.clone(),
                },
            );
            names.push(name.clone());
        }
        if !job.drops.is_empty() {
            // The quarantine holds the rows the drop expectations removed, column for column.
            let q = job.table.quarantine();
            let mut q_names = names.clone();
            for name in &names {
                if let Some(origin) = self.origins.get(&ColumnRef::new(&job.table, name)).cloned() {
                    self.origins.insert(ColumnRef::new(&q, name), origin);
                }
            }
            for extra in DROP_QUARANTINE_COLUMNS {
                self.origins.insert(
                    ColumnRef::new(&q, extra),
                    ColumnOrigin::Loader {
                        what: format!(
                            "the drop expectation of {} the row violated, and its run",
                            job.table
                        ),
                    },
                );
                q_names.push(extra.to_string());
            }
            self.tables.insert(q, q_names);
        }
        self.tables.insert(job.table.clone(), names);
        self.uses.insert(
            job.table.clone(),
            (job.sql_file.clone(), query.uses.clone()),
        );
    }
}

/// What the loader fills a lineage column of a bronze table with.
fn loader_column(name: &str) -> &'static str {
    match name {
        "_source_file" => "the path of the source file the row was loaded from",
        "_source_line" => "the line of the source file the row starts at",
        "_ingested_at" => "the time of the run that loaded the row",
        "_run_id" => "the id of the run that loaded the row",
        _ => "the loader",
    }
}
