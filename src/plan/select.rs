//! `--select`: the jobs a run or a backfill covers, named by the tables they write, as dbt
//! users write them: `silver.orders` (that job), `silver.orders+` (and every job downstream of
//! it), `+gold.fact_orders` (and every job upstream of it), `+silver.orders+` (both). Several
//! selectors (comma-separated or repeated) select the union.

use std::collections::HashSet;
use std::fmt;

use super::graph::{JobGraph, JobId};
use crate::error::{Error, Result};
use crate::spec::{Pipeline, TableName};

/// One `--select` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub table: TableName,
    /// `+table`: the jobs it reads from, all the way up.
    pub upstream: bool,
    /// `table+`: the jobs that read it, all the way down.
    pub downstream: bool,
}

impl Selector {
    /// The selectors of `--select` values (each may hold several, comma-separated). A term
    /// that is not `[+]namespace.table[+]` is a usage error naming it.
    pub fn parse_all(values: &[String]) -> Result<Vec<Selector>> {
        let mut out = Vec::new();
        for term in values.iter().flat_map(|v| v.split(',')) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let upstream = term.starts_with('+');
            let downstream = term.len() > 1 && term.ends_with('+');
            let name = term.trim_start_matches('+').trim_end_matches('+');
            let table = TableName::parse(name).ok_or_else(|| {
                Error::Usage(format!(
                    "--select: `{term}` is not a table: write namespace.table, with `+` before it for its upstream jobs or after it for its downstream ones (e.g. silver.orders+)"
                ))
            })?;
            out.push(Selector {
                table,
                upstream,
                downstream,
            });
        }
        Ok(out)
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plus = |on: bool| if on { "+" } else { "" };
        write!(
            f,
            "{}{}{}",
            plus(self.upstream),
            self.table,
            plus(self.downstream)
        )
    }
}

/// The jobs of `graph` that `selectors` name, with their upstream and downstream jobs where
/// asked. Every selector must name a table `pipeline` writes (a usage error listing them).
pub fn select_jobs(
    graph: &JobGraph,
    pipeline: &Pipeline,
    selectors: &[Selector],
) -> Result<HashSet<JobId>> {
    let mut selected = HashSet::new();
    for s in selectors {
        let job = *graph.producers.get(&s.table).ok_or_else(|| {
            let jobs = pipeline.ingests.iter().map(|j| &j.table);
            let mut tables: Vec<String> = jobs
                .chain(pipeline.transforms.iter().map(|j| &j.table))
                .map(|t| t.to_string())
                .collect();
            tables.sort();
            Error::Usage(format!(
                "--select: `{}` is not a table pipeline `{}` writes; it writes {}",
                s.table,
                pipeline.name,
                tables.join(", ")
            ))
        })?;
        let mut one = HashSet::from([job]);
        if s.upstream {
            one = upstream_of(graph, one);
        }
        if s.downstream {
            one = downstream_of(graph, one);
        }
        selected.extend(one);
    }
    Ok(selected)
}

/// `jobs` and every job they read from, transitively.
fn upstream_of(graph: &JobGraph, mut jobs: HashSet<JobId>) -> HashSet<JobId> {
    for job in graph.order.iter().rev() {
        if jobs.contains(job) {
            jobs.extend(graph.dependencies(*job));
        }
    }
    jobs
}

/// `jobs` and every job that reads from them, transitively.
fn downstream_of(graph: &JobGraph, mut jobs: HashSet<JobId>) -> HashSet<JobId> {
    for job in &graph.order {
        if graph.dependencies(*job).iter().any(|d| jobs.contains(d)) {
            jobs.insert(*job);
        }
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(values: &[&str]) -> Result<Vec<String>> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        Ok(Selector::parse_all(&values)?
            .iter()
            .map(|s| format!("{}|{}|{}", s.upstream, s.table, s.downstream))
            .collect())
    }

    #[test]
    fn terms_read_as_dbt_users_write_them() {
        assert_eq!(
            parsed(&[
                "silver.orders",
                "+gold.fact_orders, silver.customers+",
                "+a.b+"
            ])
            .unwrap(),
            [
                "false|silver.orders|false",
                "true|gold.fact_orders|false",
                "false|silver.customers|true",
                "true|a.b|true"
            ]
        );
        assert_eq!(
            Selector::parse_all(&["+a.b+".into()]).unwrap()[0].to_string(),
            "+a.b+"
        );
    }

    #[test]
    fn a_term_that_is_not_a_table_is_refused() {
        for bad in [
            "orders",
            "+",
            "a.b.c.d;",
            "silver.orders; DROP TABLE x",
            "s/../x.y",
        ] {
            let err = parsed(&[bad]).unwrap_err().to_string();
            assert!(err.contains("is not a table"), "{bad}: {err}");
        }
    }
}
