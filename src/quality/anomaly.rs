//! Volume and null-rate anomalies: a table's row count, or a column's share of NULLs, compared
//! with the mean of its last N measurements (kept in the run records), and when it moves too
//! far, the upstream changes of the same run that lineage connects to it: the upstream tables
//! that changed, and for bronze, the source files this run loaded (with their NULL counts).

use std::collections::{BTreeSet, HashMap};

use datafusion::prelude::SessionContext;

use super::query::scalar_rows;
use crate::commit::StagedTable;
use crate::error::Result;
use crate::lineage::PipelineLineage;
use crate::spec::{quote_ident, ColumnRef, TableName};

/// Earlier measurements of each anomaly expectation, oldest first.
#[derive(Debug, Default)]
pub struct Baselines(pub(super) HashMap<(String, String), Vec<f64>>);

impl Baselines {
    /// The last `n` measurements of expectation `name` on `table`.
    pub fn last(&self, table: &TableName, name: &str, n: usize) -> &[f64] {
        let all = self
            .0
            .get(&(table.to_string(), name.to_string()))
            .map(Vec::as_slice)
            .unwrap_or_default();
        &all[all.len().saturating_sub(n)..]
    }
}

/// How a measurement compares with its history.
pub struct Judgement {
    pub anomalous: bool,
    pub detail: String,
}

/// Compares `measured` with the mean of `history`. `relative`: the change is a fraction of
/// the mean (row counts); otherwise an absolute difference (rates). `show` formats a value.
pub fn judge(
    measured: f64,
    history: &[f64],
    max_change: f64,
    relative: bool,
    show: impl Fn(f64) -> String,
) -> Judgement {
    if history.is_empty() {
        return Judgement {
            anomalous: false,
            detail: format!(
                "{}; no earlier run to compare with (the baseline starts here)",
                show(measured)
            ),
        };
    }
    let mean = history.iter().sum::<f64>() / history.len() as f64;
    let change = if relative {
        if mean == 0.0 {
            if measured == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (measured - mean) / mean
        }
    } else {
        measured - mean
    };
    let shown_change = if relative {
        if change.is_finite() {
            format!("{:+.0}%", change * 100.0)
        } else {
            "from none".to_string()
        }
    } else {
        format!("{:+.1} points", change * 100.0)
    };
    let limit = if relative {
        format!("{:.0}%", max_change * 100.0)
    } else {
        format!("{:.1} points", max_change * 100.0)
    };
    let anomalous = change.abs() > max_change;
    Judgement {
        anomalous,
        detail: format!(
            "{} vs a mean of {} over the last {} run(s): {shown_change} ({} {limit})",
            show(measured),
            show(mean),
            history.len(),
            if anomalous { "beyond" } else { "within" }
        ),
    }
}

/// What the run changed upstream of `table` (and of `column`, for a null rate), where lineage
/// connects it: each upstream table this run changed, with its rows added and removed, and for
/// bronze tables the source files this run loaded (for a column: those with NULLs in it).
pub async fn upstream_causes(
    session: &SessionContext,
    table: &TableName,
    column: Option<&str>,
    lineage: &PipelineLineage,
    changed: &HashMap<&TableName, &StagedTable>,
    bronze: &BTreeSet<TableName>,
    run_id: &str,
) -> Result<Vec<String>> {
    let mut causes = Vec::new();
    match column {
        None => {
            for up in upstream_tables(lineage, table) {
                let Some(staged) = changed.get(&up) else {
                    continue;
                };
                let mut line = format!(
                    "{up}: +{} / -{} rows this run",
                    staged.added_rows, staged.deleted_rows
                );
                if bronze.contains(&up) {
                    let files = scalar_rows(
                        session,
                        &format!(
                            "SELECT _source_file, count(*) FROM {} WHERE _run_id = '{run_id}' GROUP BY _source_file ORDER BY 2 DESC, 1 LIMIT 3",
                            up.quoted()
                        ),
                    )
                    .await?;
                    let files: Vec<String> = files
                        .into_iter()
                        .map(|r| format!("{} ({} rows)", text(&r, 0), text(&r, 1)))
                        .collect();
                    if !files.is_empty() {
                        line.push_str(&format!(", loaded from {}", files.join(", ")));
                    }
                }
                causes.push(line);
            }
        }
        Some(column) => {
            for source in lineage.all_upstream(&ColumnRef::new(table, column)) {
                let Some(staged) = changed.get(&source.table) else {
                    continue;
                };
                if !bronze.contains(&source.table) {
                    causes.push(format!(
                        "{source} (via {}: +{} / -{} rows this run)",
                        source.table, staged.added_rows, staged.deleted_rows
                    ));
                    continue;
                }
                let files = scalar_rows(
                    session,
                    &format!(
                        "SELECT _source_file, count(*) FILTER (WHERE {c} IS NULL), count(*) FROM {t} WHERE _run_id = '{run_id}' GROUP BY _source_file HAVING count(*) FILTER (WHERE {c} IS NULL) > 0 ORDER BY 2 DESC, 1 LIMIT 3",
                        c = quote_ident(&source.column),
                        t = source.table.quoted()
                    ),
                )
                .await?;
                for r in files {
                    causes.push(format!(
                        "{source} is NULL in {} of {} rows loaded from {}",
                        text(&r, 1),
                        text(&r, 2),
                        text(&r, 0)
                    ));
                }
            }
        }
    }
    Ok(causes)
}

fn text(row: &[Option<String>], i: usize) -> String {
    row.get(i)
        .cloned()
        .flatten()
        .unwrap_or_else(|| "NULL".into())
}

/// Tables `table` is computed from, at any distance, nearest first.
fn upstream_tables(lineage: &PipelineLineage, table: &TableName) -> Vec<TableName> {
    let mut out: Vec<TableName> = Vec::new();
    let mut queue = std::collections::VecDeque::from([table.clone()]);
    while let Some(t) = queue.pop_front() {
        let Some((_, uses)) = lineage.uses.get(&t) else {
            continue;
        };
        for u in uses {
            if u.column.table != *table && !out.contains(&u.column.table) {
                out.push(u.column.table.clone());
                queue.push_back(u.column.table.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judgements() {
        let rows = |v: f64| format!("{v:.0} rows");
        let j = judge(150.0, &[100.0, 100.0], 0.4, true, rows);
        assert!(j.anomalous);
        assert_eq!(
            j.detail,
            "150 rows vs a mean of 100 rows over the last 2 run(s): +50% (beyond 40%)"
        );
        assert!(!judge(120.0, &[100.0], 0.4, true, rows).anomalous);
        assert!(!judge(5.0, &[], 0.1, true, rows).anomalous);
        let pct = |v: f64| format!("{:.1}%", v * 100.0);
        let j = judge(0.30, &[0.05, 0.05], 0.10, false, pct);
        assert!(j.anomalous);
        assert_eq!(
            j.detail,
            "30.0% vs a mean of 5.0% over the last 2 run(s): +25.0 points (beyond 10.0 points)"
        );
    }
}
