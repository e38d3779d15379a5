//! Column lineage of one DataFusion logical plan: for every output column, the table columns
//! it derives from; and every table column the query uses anywhere (projections, filters,
//! joins, groupings, subqueries), with the SQL line of each use when the parser kept it.
//!
//! The walk is positional: each node's output fields get the lineage of the input fields (or
//! expressions) they come from, so aliases, CTEs and subqueries resolve by themselves. A node
//! the walk does not know maps each output column to everything its inputs derive from, which
//! over-reports and never misses.

use std::collections::BTreeSet;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::Column;
use datafusion::logical_expr::{Distinct, Expr, JoinType, LogicalPlan};

use super::ColumnRef;
use crate::spec::TableName;

/// Where one output column comes from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Derivation {
    /// Every table column its value is computed from.
    pub sources: BTreeSet<ColumnRef>,
    /// The value is a table column passed through unchanged (possibly renamed or cast).
    pub direct: bool,
}

/// One use of a table column in the SQL.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Use {
    pub column: ColumnRef,
    /// 1-based line in the SQL text, when known.
    pub line: Option<usize>,
}

/// The lineage of a planned query.
#[derive(Debug, Clone, Default)]
pub struct QueryLineage {
    /// One entry per output column, in output order: (name, derivation, expression text).
    pub outputs: Vec<(String, Derivation, String)>,
    /// Every use of a table column anywhere in the query.
    pub uses: BTreeSet<Use>,
}

/// Computes the lineage of `plan` (an unoptimized plan straight from the SQL planner, so
/// that column spans still point into the SQL text).
pub fn query_lineage(plan: &LogicalPlan) -> QueryLineage {
    let mut uses = BTreeSet::new();
    let derived = node(plan, &mut uses);
    let exprs = top_expressions(plan);
    let outputs = plan
        .schema()
        .fields()
        .iter()
        .zip(derived)
        .enumerate()
        .map(|(i, (f, d))| {
            let text = exprs
                .get(i)
                .map(|e| strip_alias(e).to_string())
                .unwrap_or_default();
            (f.name().clone(), d, text)
        })
        .collect();
    QueryLineage { outputs, uses }
}

/// The projection expressions that produce the query's columns (through sorts and limits).
fn top_expressions(plan: &LogicalPlan) -> Vec<Expr> {
    match plan {
        LogicalPlan::Projection(p) => p.expr.clone(),
        LogicalPlan::Sort(_)
        | LogicalPlan::Limit(_)
        | LogicalPlan::Filter(_)
        | LogicalPlan::Distinct(Distinct::All(_)) => plan
            .inputs()
            .first()
            .map(|i| top_expressions(i))
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn strip_alias(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => strip_alias(&a.expr),
        other => other,
    }
}

fn node(plan: &LogicalPlan, uses: &mut BTreeSet<Use>) -> Vec<Derivation> {
    let inputs: Vec<&LogicalPlan> = plan.inputs();
    let derived: Vec<Vec<Derivation>> = inputs.iter().map(|i| node(i, uses)).collect();
    let resolve = |c: &Column| -> Option<&Derivation> {
        inputs.iter().zip(&derived).find_map(|(input, d)| {
            input
                .schema()
                .maybe_index_of_column(c)
                .and_then(|i| d.get(i))
        })
    };
    // Every column this node's expressions name is a use of its sources.
    let _ = plan.apply_expressions(|e| {
        record_uses(e, &resolve, uses);
        Ok(TreeNodeRecursion::Continue)
    });
    let expr_lineage = |e: &Expr, uses: &mut BTreeSet<Use>| expression(e, &resolve, uses);
    let width = plan.schema().fields().len();
    let passthrough = || derived.first().cloned().unwrap_or_default();
    let out: Vec<Derivation> = match plan {
        LogicalPlan::TableScan(scan) => {
            let table = TableName::parse(&scan.table_name.to_string()).unwrap_or(TableName {
                namespace: String::new(),
                name: scan.table_name.to_string(),
            });
            scan.projected_schema
                .fields()
                .iter()
                .map(|f| Derivation {
                    sources: BTreeSet::from([ColumnRef::new(&table, f.name())]),
                    direct: true,
                })
                .collect()
        }
        LogicalPlan::Projection(p) => p.expr.iter().map(|e| expr_lineage(e, uses)).collect(),
        LogicalPlan::Aggregate(a) => a
            .group_expr
            .iter()
            .chain(&a.aggr_expr)
            .enumerate()
            .map(|(i, e)| {
                let mut d = expr_lineage(e, uses);
                d.direct &= i < a.group_expr.len();
                d
            })
            .collect(),
        LogicalPlan::Window(w) => {
            let mut out = passthrough();
            out.extend(w.window_expr.iter().map(|e| {
                let mut d = expr_lineage(e, uses);
                d.direct = false;
                d
            }));
            out
        }
        LogicalPlan::Distinct(Distinct::On(on)) => on
            .select_expr
            .iter()
            .map(|e| expr_lineage(e, uses))
            .collect(),
        LogicalPlan::Join(j) => match j.join_type {
            JoinType::LeftSemi | JoinType::LeftAnti => derived[0].clone(),
            JoinType::RightSemi | JoinType::RightAnti => derived[1].clone(),
            _ => derived.iter().flatten().cloned().collect(),
        },
        LogicalPlan::Union(_) => (0..width)
            .map(|i| {
                let mut d = Derivation {
                    sources: BTreeSet::new(),
                    direct: true,
                };
                for input in &derived {
                    let Some(part) = input.get(i) else { continue };
                    d.sources.extend(part.sources.iter().cloned());
                    d.direct &= part.direct;
                }
                d
            })
            .collect(),
        LogicalPlan::Filter(_)
        | LogicalPlan::Sort(_)
        | LogicalPlan::Limit(_)
        | LogicalPlan::Repartition(_)
        | LogicalPlan::SubqueryAlias(_)
        | LogicalPlan::Subquery(_)
        | LogicalPlan::Distinct(Distinct::All(_)) => passthrough(),
        LogicalPlan::Values(_) | LogicalPlan::EmptyRelation(_) => {
            vec![Derivation::default(); width]
        }
        _ => Vec::new(),
    };
    if out.len() == width {
        return out;
    }
    // Unknown shape: every output column may derive from anything the inputs derive from.
    let all: BTreeSet<ColumnRef> = derived
        .iter()
        .flatten()
        .flat_map(|d| d.sources.iter().cloned())
        .collect();
    vec![
        Derivation {
            sources: all,
            direct: false,
        };
        width
    ]
}

/// The lineage of one expression evaluated over a node's inputs.
fn expression<'a>(
    e: &Expr,
    resolve: &impl Fn(&Column) -> Option<&'a Derivation>,
    uses: &mut BTreeSet<Use>,
) -> Derivation {
    let mut sources = BTreeSet::new();
    let _ = e.apply(|x| {
        match x {
            Expr::Column(c) => {
                if let Some(d) = resolve(c) {
                    sources.extend(d.sources.iter().cloned());
                }
            }
            Expr::ScalarSubquery(sq) => {
                let inner = node(&sq.subquery, uses);
                if let Some(first) = inner.first() {
                    sources.extend(first.sources.iter().cloned());
                }
            }
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    });
    let direct = match unwrap_passthrough(e) {
        Expr::Column(c) => resolve(c).is_some_and(|d| d.direct),
        _ => false,
    };
    Derivation { sources, direct }
}

/// An expression without the aliases and casts that keep a column's values as they are.
fn unwrap_passthrough(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => unwrap_passthrough(&a.expr),
        Expr::Cast(c) => unwrap_passthrough(&c.expr),
        Expr::TryCast(c) => unwrap_passthrough(&c.expr),
        other => other,
    }
}

fn record_uses<'a>(
    e: &Expr,
    resolve: &impl Fn(&Column) -> Option<&'a Derivation>,
    uses: &mut BTreeSet<Use>,
) {
    let _ = e.apply(|x| {
        match x {
            Expr::Column(c) => {
                if let Some(d) = resolve(c) {
                    let line = c
                        .spans
                        .first()
                        .map(|s| s.start.line as usize)
                        .filter(|l| *l > 0);
                    for source in &d.sources {
                        uses.insert(Use {
                            column: source.clone(),
                            line,
                        });
                    }
                }
            }
            // A subquery's own uses (its derivation is taken by `expression`).
            Expr::ScalarSubquery(sq) => {
                node(&sq.subquery, uses);
            }
            Expr::Exists(ex) => {
                node(&ex.subquery.subquery, uses);
            }
            Expr::InSubquery(ins) => {
                node(&ins.subquery.subquery, uses);
            }
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    });
}
