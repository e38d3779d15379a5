//! What a backfill recomputes: the selected time-partitioned transforms for a date range, and
//! everything downstream of them (no ingest job runs).

use std::collections::HashSet;

use chrono::{Days, NaiveDate};

use super::graph::{JobGraph, JobId};
use super::select::{select_jobs, Selector};
use crate::error::{Error, Result};
use crate::spec::{Pipeline, TableName};

/// The tables a backfill recomputes, and the time range (inclusive instants, microseconds since
/// the epoch) whose partitions it replaces in each.
#[derive(Debug, Clone)]
pub struct Backfill {
    pub tables: Vec<TableName>,
    pub from: i64,
    pub to: i64,
}

impl Backfill {
    /// The backfill of the days `from` to `to` (`YYYY-MM-DD`, both included) of `tables` (every
    /// transform partitioned by year, month, day or hour when empty), checked against the spec.
    /// Errors say which argument is wrong and what it may be.
    pub fn request(spec: &Pipeline, from: &str, to: &str, tables: &[String]) -> Result<Backfill> {
        let day = |flag: &str, text: &str| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map_err(|_| Error::Usage(format!("{flag} {text}: expected a date as YYYY-MM-DD")))
        };
        let (first, last) = (day("--from", from)?, day("--to", to)?);
        if last < first {
            return Err(Error::Usage(format!(
                "--to {to} is before --from {from}; the range is inclusive: --from {from} --to {from} is one day"
            )));
        }
        let micros = |d: NaiveDate| {
            d.and_hms_opt(0, 0, 0)
                .map_or(0, |t| t.and_utc().timestamp_micros())
        };
        let time_partitioned: Vec<&TableName> = spec
            .transforms
            .iter()
            .filter(|t| t.time_partition().is_some())
            .map(|t| &t.table)
            .collect();
        let names = |v: &[&TableName]| {
            v.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let selected = if tables.is_empty() {
            time_partitioned.iter().map(|t| (*t).clone()).collect()
        } else {
            let mut selected = Vec::new();
            for t in tables {
                let name = TableName::parse(t.trim())
                    .filter(|n| time_partitioned.contains(&n))
                    .ok_or_else(|| {
                        Error::Usage(format!(
                            "--tables {t}: not a transform of `{}` partitioned by year, month, day or hour; those are: {}",
                            spec.name,
                            names(&time_partitioned)
                        ))
                    })?;
                selected.push(name);
            }
            selected
        };
        if selected.is_empty() {
            return Err(Error::Usage(format!(
                "pipeline `{}` has no transform partitioned by year, month, day or hour to backfill",
                spec.name
            )));
        }
        Ok(Backfill {
            tables: selected,
            from: micros(first),
            to: micros(last + Days::new(1)) - 1,
        })
    }
}

/// The jobs a run executes: every job; for a backfill, the selected tables' transforms and
/// every transform downstream of them (no ingest); with `--select` (`select` not empty), only
/// those of them it names (none is a usage error).
pub fn jobs_in_scope(
    graph: &JobGraph,
    pipeline: &Pipeline,
    backfill: Option<&Backfill>,
    select: &[Selector],
) -> Result<HashSet<JobId>> {
    let all = backfill_scope(graph, pipeline, backfill)?;
    if select.is_empty() {
        return Ok(all);
    }
    let selected: HashSet<JobId> = select_jobs(graph, pipeline, select)?
        .intersection(&all)
        .copied()
        .collect();
    if selected.is_empty() {
        let terms: Vec<String> = select.iter().map(|s| s.to_string()).collect();
        return Err(Error::Usage(format!(
            "--select {} names no job this {} runs (a backfill runs transforms only)",
            terms.join(","),
            if backfill.is_some() {
                "backfill"
            } else {
                "run"
            }
        )));
    }
    Ok(selected)
}

/// Every job, or a backfill's: its tables' transforms and every transform downstream.
fn backfill_scope(
    graph: &JobGraph,
    pipeline: &Pipeline,
    backfill: Option<&Backfill>,
) -> Result<HashSet<JobId>> {
    let Some(backfill) = backfill else {
        return Ok(graph.order.iter().copied().collect());
    };
    let mut selected: HashSet<JobId> = HashSet::new();
    for table in &backfill.tables {
        let i = pipeline
            .transforms
            .iter()
            .position(|t| &t.table == table)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--tables: `{table}` is not a transform of pipeline `{}`",
                    pipeline.name
                ))
            })?;
        selected.insert(JobId::Transform(i));
    }
    // Downstream closure, in dependency order.
    for job in &graph.order {
        if graph
            .dependencies(*job)
            .iter()
            .any(|d| selected.contains(d))
        {
            selected.insert(*job);
        }
    }
    Ok(selected)
}
