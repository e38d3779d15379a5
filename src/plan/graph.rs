//! The job graph of a pipeline: which job produces which table, which tables each transform
//! reads, an order in which every job runs after its inputs, and cycle detection.

use std::collections::HashMap;

use crate::engine::line_naming;
use crate::error::{Error, Result};
use crate::spec::{BadRecordPolicy, Check, Pipeline, TableName};
use crate::transform::{parse_transform, ParsedTransform};

/// A job of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobId {
    Ingest(usize),
    Transform(usize),
}

/// The job graph of a pipeline: transforms parsed, no cycles, jobs in dependency order.
#[derive(Debug)]
pub struct JobGraph {
    /// Parsed SQL of each transform, by transform index.
    pub transforms: Vec<ParsedTransform>,
    /// Producing job of every table this pipeline writes (quarantine tables included).
    pub producers: HashMap<TableName, JobId>,
    /// Jobs in an order where each comes after the producers of its inputs.
    pub order: Vec<JobId>,
}

impl JobGraph {
    /// Tables read by transforms that no job of this pipeline produces (they must exist).
    pub fn external_inputs(&self) -> Vec<(usize, TableName)> {
        let mut out = Vec::new();
        for (i, t) in self.transforms.iter().enumerate() {
            for input in &t.inputs {
                if !self.producers.contains_key(input) {
                    out.push((i, input.clone()));
                }
            }
        }
        out
    }

    /// The jobs that must finish before `job` starts.
    pub fn dependencies(&self, job: JobId) -> Vec<JobId> {
        match job {
            JobId::Ingest(_) => Vec::new(),
            JobId::Transform(i) => {
                let mut deps: Vec<JobId> = self.transforms[i]
                    .inputs
                    .iter()
                    .filter_map(|t| self.producers.get(t).copied())
                    .collect();
                deps.dedup();
                deps
            }
        }
    }
}

/// Parses every transform and orders the jobs. A cycle is an error naming its tables, and
/// where each SQL file reads the next one's.
pub fn job_graph(pipeline: &Pipeline) -> Result<JobGraph> {
    let mut graph = JobGraph {
        transforms: parse_transforms(pipeline)?,
        producers: producers(pipeline),
        order: Vec::new(),
    };
    graph.order = dependency_order(&graph, pipeline)?;
    Ok(graph)
}

/// Every transform parsed, by transform index; the lookup table of a `drop` expectation
/// counts among its inputs.
fn parse_transforms(pipeline: &Pipeline) -> Result<Vec<ParsedTransform>> {
    let mut transforms = pipeline
        .transforms
        .iter()
        .map(parse_transform)
        .collect::<Result<Vec<_>>>()?;
    // A `drop` expectation's lookup table is read like an input: it runs first, and a change
    // to it recomputes the table.
    for (parsed, job) in transforms.iter_mut().zip(&pipeline.transforms) {
        for e in &job.drops {
            if let Check::Relationships { to_table, .. } = &e.check {
                if !parsed.inputs.contains(to_table) {
                    parsed.inputs.push(to_table.clone());
                }
            }
        }
    }
    Ok(transforms)
}

/// The producing job of every table the pipeline writes, quarantine tables included.
fn producers(pipeline: &Pipeline) -> HashMap<TableName, JobId> {
    let mut producers = HashMap::new();
    for (i, job) in pipeline.ingests.iter().enumerate() {
        producers.insert(job.table.clone(), JobId::Ingest(i));
        if job.on_bad_record == BadRecordPolicy::Quarantine {
            producers.insert(job.table.quarantine(), JobId::Ingest(i));
        }
    }
    for (i, job) in pipeline.transforms.iter().enumerate() {
        producers.insert(job.table.clone(), JobId::Transform(i));
        if !job.drops.is_empty() {
            producers.insert(job.table.quarantine(), JobId::Transform(i));
        }
    }
    producers
}

/// A node's state in the depth-first sort.
#[derive(Clone, Copy, PartialEq)]
enum Mark {
    White,
    Grey,
    Black,
}

/// The ingests, then the transforms each after the producers of its inputs; an error at the
/// first cycle.
fn dependency_order(graph: &JobGraph, pipeline: &Pipeline) -> Result<Vec<JobId>> {
    // Depth-first topological sort; a grey node met again closes a cycle.
    let n = pipeline.transforms.len();
    let mut marks = vec![Mark::White; n];
    let mut order: Vec<JobId> = (0..pipeline.ingests.len()).map(JobId::Ingest).collect();
    fn visit(
        i: usize,
        graph: &JobGraph,
        pipeline: &Pipeline,
        marks: &mut Vec<Mark>,
        stack: &mut Vec<usize>,
        order: &mut Vec<JobId>,
    ) -> Result<()> {
        match marks[i] {
            Mark::Black => return Ok(()),
            Mark::Grey => return Err(cycle_error(pipeline, stack, i)),
            Mark::White => {}
        }
        marks[i] = Mark::Grey;
        stack.push(i);
        for dep in graph.dependencies(JobId::Transform(i)) {
            if let JobId::Transform(d) = dep {
                visit(d, graph, pipeline, marks, stack, order)?;
            }
        }
        stack.pop();
        marks[i] = Mark::Black;
        order.push(JobId::Transform(i));
        Ok(())
    }
    for i in 0..n {
        let mut stack = Vec::new();
        visit(i, graph, pipeline, &mut marks, &mut stack, &mut order)?;
    }
    Ok(order)
}

/// The error for the cycle closed by meeting transform `i` again on the `stack` of the sort:
/// its tables, and where each transform of it reads the next one's table.
fn cycle_error(pipeline: &Pipeline, stack: &[usize], i: usize) -> Error {
    let start = stack.iter().position(|&s| s == i).unwrap_or(0);
    let mut names: Vec<String> = stack[start..]
        .iter()
        .map(|&s| pipeline.transforms[s].table.to_string())
        .collect();
    names.push(pipeline.transforms[i].table.to_string());
    // Where each transform of the cycle reads the next one's table.
    let mut cycle: Vec<usize> = stack[start..].to_vec();
    cycle.push(i);
    let reads: Vec<String> = cycle
        .windows(2)
        .map(|pair| {
            let (job, next) = (&pipeline.transforms[pair[0]], &pipeline.transforms[pair[1]]);
            let line = line_naming(&job.sql, &next.table.to_string())
                .map(|l| format!(":{l}"))
                .unwrap_or_default();
            format!("{}{line} reads {}", job.sql_file.display(), next.table)
        })
        .collect();
    Error::Pipeline {
        file: pipeline.transforms[i].origin.file.clone(),
        message: format!(
            "dependency cycle: {} ({})",
            names.join(" -> "),
            reads.join("; ")
        ),
        hint: Some(
            "a transform cannot read, directly or through others, the table it produces".into(),
        ),
    }
}
