//! Which tables of a pipeline hold an erase's subject, and under which names. A `pipeline
//! erase --where` condition names the subject's columns (`customer_id = 4711`); a table holds
//! the subject when it has every one of them:
//!
//! 1. under the name the table's `erase` key maps it to (`erase = { customer_id = "buyer" }`);
//! 2. else under the same name;
//! 3. else (a transform) as an output column passed through unchanged, possibly renamed or
//!    cast, from a column that holds the subject in one of its inputs (column lineage).
//!
//! A column merely computed from the subject (`count(DISTINCT customer_id)`) does not hold it:
//! such tables are recomputed from the erased ones instead. Tables are visited in job order,
//! so a transform sees what its inputs hold.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{visit_expressions, visit_expressions_mut, Expr, Ident};

use crate::engine::admit_expression;
use crate::error::{Error, Result};
use crate::plan::{JobId, Validated};
use crate::spec::{Pipeline, TableName};

/// One table of the pipeline and whether (and how) it holds the subject.
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectTable {
    pub table: TableName,
    /// The condition with this table's column names; `None` when it lacks a subject column.
    pub condition: Option<String>,
    /// Subject column -> this table's column, where they differ.
    pub renamed: BTreeMap<String, String>,
}

fn parse(condition: &str) -> Result<Expr> {
    admit_expression(condition)
        .map(|e| e.expr)
        .map_err(|r| Error::Usage(format!("--where {condition}: not a SQL condition: {r}")))
}

/// The column names a condition uses (unqualified), in order of first use.
pub fn condition_columns(condition: &str) -> Result<Vec<String>> {
    let expr = parse(condition)?;
    let mut out: Vec<String> = Vec::new();
    let _ = visit_expressions(&expr, |e| {
        let name = match e {
            Expr::Identifier(i) => Some(i.value.clone()),
            Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
            _ => None,
        };
        if let Some(n) = name.filter(|n| !out.contains(n)) {
            out.push(n);
        }
        ControlFlow::<()>::Continue(())
    });
    if out.is_empty() {
        return Err(Error::Usage(format!(
            "--where {condition}: name the subject's column, e.g. --where \"customer_id = 4711\""
        )));
    }
    Ok(out)
}

/// `condition` with its columns renamed as `renamed` says (subject column -> table column).
pub fn rename_columns(condition: &str, renamed: &BTreeMap<String, String>) -> Result<String> {
    let mut expr = parse(condition)?;
    let _ = visit_expressions_mut(&mut expr, |e| {
        let rename = |i: &Ident| renamed.get(&i.value).map(|to| Ident::new(to.clone()));
        match e {
            Expr::Identifier(i) => {
                if let Some(new) = rename(i) {
                    *e = Expr::Identifier(new);
                }
            }
            Expr::CompoundIdentifier(parts) => {
                if let Some(new) = parts.last().and_then(rename) {
                    *e = Expr::Identifier(new);
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(expr.to_string())
}

/// Every table the pipeline writes (ingest tables, then transforms, in job order), with the
/// condition as it applies to it.
pub fn subject_tables(
    pipeline: &Pipeline,
    validated: &Validated,
    condition: &str,
) -> Result<Vec<SubjectTable>> {
    let subjects = condition_columns(condition)?;
    // Per table that holds the subject: subject column -> its column there.
    let mut holds: HashMap<TableName, BTreeMap<String, String>> = HashMap::new();
    let mut out = Vec::new();
    for job in &validated.graph.order {
        let (table, declared) = match *job {
            JobId::Ingest(i) => (&pipeline.ingests[i].table, &pipeline.ingests[i].erase),
            JobId::Transform(i) => (&pipeline.transforms[i].table, &pipeline.transforms[i].erase),
        };
        let Some(schema) = validated.schemas.get(table) else {
            continue;
        };
        let has = |c: &str| schema.column_with_name(c).is_some();
        let mut found = BTreeMap::new();
        for subject in &subjects {
            let column = if let Some(column) = declared.get(subject) {
                if !has(column) {
                    return Err(Error::Usage(format!(
                        "{table}: its `erase` key maps `{subject}` to `{column}`, which it does not have"
                    )));
                }
                Some(column.clone())
            } else if has(subject) {
                Some(subject.clone())
            } else if let JobId::Transform(_) = job {
                validated.lineage.get(table).and_then(|lineage| {
                    lineage.outputs.iter().find_map(|(name, derivation, _)| {
                        (derivation.direct
                            && derivation.sources.iter().any(|s| {
                                holds.get(&s.table).and_then(|m| m.get(subject)) == Some(&s.column)
                            }))
                        .then(|| name.clone())
                    })
                })
            } else {
                None
            };
            if let Some(column) = column {
                found.insert(subject.clone(), column);
            }
        }
        let complete = found.len() == subjects.len();
        let renamed: BTreeMap<String, String> = found
            .iter()
            .filter(|(s, c)| s != c)
            .map(|(s, c)| (s.clone(), c.clone()))
            .collect();
        let applied = if complete {
            Some(rename_columns(condition, &renamed)?)
        } else {
            None
        };
        if complete {
            holds.insert(table.clone(), found);
        }
        out.push(SubjectTable {
            table: table.clone(),
            condition: applied,
            renamed,
        });
    }
    Ok(out)
}

/// The transforms computed (directly or not) from `erased` tables that do not hold the
/// subject themselves: an erase recomputes them in its publish.
pub fn recomputed_by_erase(validated: &Validated, erased: &[TableName]) -> Vec<JobId> {
    let graph = &validated.graph;
    let erased_jobs: Vec<JobId> = erased
        .iter()
        .filter_map(|t| graph.producers.get(t).copied())
        .collect();
    let mut changed: Vec<JobId> = erased_jobs.clone();
    let mut out = Vec::new();
    for job in &graph.order {
        if changed.contains(job) {
            continue;
        }
        if graph.dependencies(*job).iter().any(|d| changed.contains(d)) {
            changed.push(*job);
            out.push(*job);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{condition_columns, rename_columns};

    #[test]
    fn columns_are_found_and_renamed_and_nothing_else_changes() {
        let condition =
            "customer_id = 4711 OR (t.customer_id IN (1, 2) AND region = 'customer_id')";
        assert_eq!(
            condition_columns(condition).unwrap(),
            vec!["customer_id".to_string(), "region".to_string()]
        );
        let renamed = BTreeMap::from([("customer_id".to_string(), "buyer".to_string())]);
        assert_eq!(
            rename_columns(condition, &renamed).unwrap(),
            "buyer = 4711 OR (buyer IN (1, 2) AND region = 'customer_id')"
        );
        assert!(condition_columns("1 = 1").is_err());
        assert!(condition_columns("customer_id = ").is_err());
    }
}
