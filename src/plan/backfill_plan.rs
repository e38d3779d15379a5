//! `pipeline backfill --plan`: what a backfill would recompute, which partitions it would
//! replace and which input files (and bytes) it would read, computed from the catalog as it is.
//! Nothing is written.

use std::collections::{HashMap, HashSet};

use futures::TryStreamExt;
use iceberg::expr::{Predicate, Reference};
use iceberg::spec::{Datum, PrimitiveType, Type};
use iceberg::table::Table;
use serde::Serialize;

use super::backfill::{jobs_in_scope, Backfill};
use super::graph::JobId;
use super::scope::{decide, Forced, Scope};
use super::select::Selector;
use super::validate::validate;
use crate::commit::summary::{total, total_records, TOTAL_DATA_FILES, TOTAL_FILES_SIZE};
use crate::commit::PartitionRange;
use crate::error::{Error, Result};
use crate::spec::{Grain, Pipeline, TableName, TransformJob, TransformMode};

/// One table a backfill would write.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedTable {
    pub table: String,
    /// `replace <partitions>`, `full refresh (why)` or `up to date`.
    pub action: String,
    pub inputs: Vec<PlannedInput>,
}

/// One input of a planned table and how much of it would be read.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedInput {
    pub table: String,
    /// `range`, `whole`, or `recomputed by this backfill` (read from the new version).
    pub read: String,
    /// Data files and bytes that would be scanned (unknown for recomputed inputs).
    pub files: Option<u64>,
    pub bytes: Option<u64>,
}

/// Plans `backfill` of `pipeline` (only the jobs `select` names, when not empty) against the
/// catalog's current state.
pub async fn plan_backfill(
    pipeline: &Pipeline,
    backfill: &Backfill,
    select: &[Selector],
) -> Result<Vec<PlannedTable>> {
    let validated = validate(pipeline).await?;
    let in_scope = jobs_in_scope(&validated.graph, pipeline, Some(backfill), select)?;
    let mut scopes: HashMap<TableName, Scope> = HashMap::new();
    let mut planned = Vec::new();
    for job_id in &validated.graph.order {
        let JobId::Transform(i) = *job_id else {
            continue;
        };
        if !in_scope.contains(job_id) {
            continue;
        }
        let job = &pipeline.transforms[i];
        let parsed = &validated.graph.transforms[i];
        let mut current_inputs = Vec::new();
        let mut recomputed = Vec::new();
        for input in &parsed.inputs {
            if let Some(scope) = scopes.get(input) {
                recomputed.push((input.clone(), scope.clone()));
                continue;
            }
            let table = match validated.external.get(input) {
                Some(t) => t.clone(),
                None => validated.catalog.load_existing(input).await?,
            };
            current_inputs.push((input.clone(), table));
        }
        let current = validated.catalog.load(&job.table).await?;
        let forced = backfill.tables.contains(&job.table).then_some(Forced {
            from: backfill.from,
            to: backfill.to,
        });
        // What the inputs the backfill leaves alone ask for (only inputs passed in are
        // compared with the table's record), then what the recomputed ones add.
        let mut scope = decide(
            job,
            current.as_ref().map(|t| t.metadata()),
            &current_inputs,
            forced,
            false,
        )
        .await?;
        for (input, upstream) in &recomputed {
            scope = follow(job, scope, input, upstream);
        }
        let mut inputs = Vec::new();
        for (name, table) in &current_inputs {
            inputs.push(input_read(job.range_column(name), &scope, name, table).await?);
        }
        for (name, _) in &recomputed {
            inputs.push(PlannedInput {
                table: name.to_string(),
                read: "recomputed by this backfill".into(),
                files: None,
                bytes: None,
            });
        }
        planned.push(PlannedTable {
            table: job.table.to_string(),
            action: scope.describe(),
            inputs,
        });
        scopes.insert(job.table.clone(), scope);
    }
    Ok(planned)
}

/// Combines a job's own scope with an input the backfill recomputes with scope `upstream`.
pub(super) fn follow(job: &TransformJob, own: Scope, input: &TableName, upstream: &Scope) -> Scope {
    if matches!(own, Scope::Full(_)) || *upstream == Scope::UpToDate {
        return own;
    }
    let full = || Scope::Full(format!("{input} is recomputed"));
    let (Scope::Range(up), Some(_), TransformMode::ReplacePartitions, Some(p)) = (
        upstream,
        job.range_column(input),
        job.mode,
        job.time_partition(),
    ) else {
        return full();
    };
    let Some(grain) = Grain::of(p.transform) else {
        return full();
    };
    let mut range = match own {
        Scope::Range(r) => r,
        _ => PartitionRange::new(p.field_name(), grain),
    };
    for (start, end) in up.spans() {
        range.add_instants(start, end - 1);
    }
    Scope::Range(range)
}

/// How much of an input the job would read under `scope`.
pub(super) async fn input_read(
    column: Option<&str>,
    scope: &Scope,
    name: &TableName,
    table: &Table,
) -> Result<PlannedInput> {
    let current = table.metadata().current_snapshot();
    let whole = PlannedInput {
        table: name.to_string(),
        read: "whole".into(),
        files: Some(total(current, TOTAL_DATA_FILES)),
        bytes: Some(total(current, TOTAL_FILES_SIZE)),
    };
    let (Scope::Range(range), Some(column)) = (scope, column) else {
        return Ok(whole);
    };
    if total_records(current) == 0 {
        return Ok(whole);
    }
    let field = table
        .metadata()
        .current_schema()
        .field_by_name(column)
        .ok_or_else(|| Error::table_msg(name, format!("has no column `{column}`")))?;
    let datum = |micros: i64| -> Option<Datum> {
        match &*field.field_type {
            Type::Primitive(PrimitiveType::Date) => {
                Some(Datum::date(micros.div_euclid(86_400_000_000) as i32))
            }
            Type::Primitive(PrimitiveType::Timestamp) => Some(Datum::timestamp_micros(micros)),
            Type::Primitive(PrimitiveType::Timestamptz) => Some(Datum::timestamptz_micros(micros)),
            _ => None,
        }
    };
    let mut predicate: Option<Predicate> = None;
    for (start, end) in range.spans() {
        let (Some(lo), Some(hi)) = (datum(start), datum(end)) else {
            return Ok(whole);
        };
        let one = Reference::new(column)
            .greater_than_or_equal_to(lo)
            .and(Reference::new(column).less_than(hi));
        predicate = Some(match predicate {
            None => one,
            Some(p) => p.or(one),
        });
    }
    let Some(predicate) = predicate else {
        return Ok(whole);
    };
    let tasks: Vec<_> = table
        .scan()
        .with_filter(predicate)
        .build()
        .map_err(|e| Error::table(name, "cannot plan a scan", e))?
        .plan_files()
        .await
        .map_err(|e| Error::table(name, "cannot plan a scan", e))?
        .try_collect()
        .await
        .map_err(|e| Error::table(name, "cannot plan a scan", e))?;
    let files: HashSet<&str> = tasks.iter().map(|t| t.data_file_path.as_str()).collect();
    Ok(PlannedInput {
        table: name.to_string(),
        read: "range".into(),
        files: Some(files.len() as u64),
        bytes: Some(tasks.iter().map(|t| t.length).sum()),
    })
}
