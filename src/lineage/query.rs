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
use datafusion::logical_expr::{Distinct, Expr, JoinType, LogicalPlan, TableScan};

use crate::spec::{ColumnRef, TableName};

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
    let derived = node(plan, &mut uses, &|_| None);
    let texts = top_texts(plan);
    let outputs = plan
        .schema()
        .fields()
        .iter()
        .zip(derived)
        .enumerate()
        .map(|(i, (f, d))| {
            (
                f.name().clone(),
                d,
                texts.get(i).cloned().unwrap_or_default(),
            )
        })
        .collect();
    QueryLineage { outputs, uses }
}

/// The text of the expressions that produce the query's columns, without aliases (through
/// sorts, limits and filters; a union's branches joined with ` | `). Empty when unknown.
fn top_texts(plan: &LogicalPlan) -> Vec<String> {
    match plan {
        LogicalPlan::Projection(p) => p.expr.iter().map(|e| strip_alias(e).to_string()).collect(),
        LogicalPlan::Union(_) => {
            let branches: Vec<Vec<String>> = plan.inputs().iter().map(|i| top_texts(i)).collect();
            let width = plan.schema().fields().len();
            (0..width)
                .map(|i| {
                    let parts: Option<Vec<&str>> = branches
                        .iter()
                        .map(|b| b.get(i).map(String::as_str).filter(|t| !t.is_empty()))
                        .collect();
                    parts.map(|p| p.join(" | ")).unwrap_or_default()
                })
                .collect()
        }
        LogicalPlan::Sort(_)
        | LogicalPlan::Limit(_)
        | LogicalPlan::Filter(_)
        | LogicalPlan::Distinct(Distinct::All(_))
        | LogicalPlan::SubqueryAlias(_) => plan
            .inputs()
            .first()
            .map(|i| top_texts(i))
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

/// Resolves a column of an enclosing query (an outer reference inside a subquery).
type Outer<'a> = &'a dyn Fn(&Column) -> Option<Derivation>;

/// The derivation of each output column of `plan`, in output order, recording in `uses`
/// every table column its expressions (and those of its inputs and subqueries) name.
fn node(plan: &LogicalPlan, uses: &mut BTreeSet<Use>, outer: Outer) -> Vec<Derivation> {
    let inputs: Vec<&LogicalPlan> = plan.inputs();
    let derived: Vec<Vec<Derivation>> = inputs.iter().map(|i| node(i, uses, outer)).collect();
    let resolve = |c: &Column| -> Option<Derivation> {
        inputs.iter().zip(&derived).find_map(|(input, d)| {
            input
                .schema()
                .maybe_index_of_column(c)
                .and_then(|i| d.get(i).cloned())
        })
    };
    // Subqueries in this node's expressions see its inputs, then the enclosing queries.
    let inner_outer = |c: &Column| resolve(c).or_else(|| outer(c));
    let scope = Scope {
        resolve: &resolve,
        outer,
        inner_outer: &inner_outer,
    };
    // Every column this node's expressions name is a use of its sources.
    let _ = plan.apply_expressions(|e| {
        record_uses(e, &scope, uses);
        Ok(TreeNodeRecursion::Continue)
    });
    let expr_lineage = |e: &Expr, uses: &mut BTreeSet<Use>| expression(e, &scope, uses);
    let width = plan.schema().fields().len();
    let passthrough = || derived.first().cloned().unwrap_or_default();
    let out: Vec<Derivation> = match plan {
        LogicalPlan::TableScan(scan) => table_scan(scan),
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
        LogicalPlan::Union(_) => union(&derived, width),
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
    unknown_shape(&derived, width)
}

/// A table scan's columns: each the table's column of the same name, passed through.
fn table_scan(scan: &TableScan) -> Vec<Derivation> {
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

/// A union's `width` columns: each derives from the same column of every branch, and is
/// direct when it is in all of them.
fn union(derived: &[Vec<Derivation>], width: usize) -> Vec<Derivation> {
    (0..width)
        .map(|i| {
            let mut d = Derivation {
                sources: BTreeSet::new(),
                direct: true,
            };
            for input in derived {
                let Some(part) = input.get(i) else { continue };
                d.sources.extend(part.sources.iter().cloned());
                d.direct &= part.direct;
            }
            d
        })
        .collect()
}

/// The `width` columns of a node of unknown shape: none direct, each from everything its
/// inputs derive from (over-reports, never misses).
fn unknown_shape(derived: &[Vec<Derivation>], width: usize) -> Vec<Derivation> {
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

/// How a node's expressions resolve columns.
struct Scope<'a> {
    /// Columns of the node's inputs.
    resolve: &'a dyn Fn(&Column) -> Option<Derivation>,
    /// Outer references (the node is inside a subquery).
    outer: Outer<'a>,
    /// What subqueries of the node's expressions see as their outer scope.
    inner_outer: Outer<'a>,
}

impl Scope<'_> {
    /// The derivation an expression leaf refers to, if it is a column.
    fn leaf(&self, e: &Expr) -> Option<(Option<Derivation>, Option<usize>)> {
        let (d, c) = match e {
            Expr::Column(c) => ((self.resolve)(c), c),
            Expr::OuterReferenceColumn(_, c) => ((self.outer)(c), c),
            _ => return None,
        };
        let line = c
            .spans
            .first()
            .map(|s| s.start.line as usize)
            .filter(|l| *l > 0);
        Some((d, line))
    }
}

/// The lineage of one expression evaluated over a node's inputs.
fn expression(e: &Expr, scope: &Scope, uses: &mut BTreeSet<Use>) -> Derivation {
    let mut sources = BTreeSet::new();
    let _ = e.apply(|x| {
        if let Some((Some(d), _)) = scope.leaf(x) {
            sources.extend(d.sources.iter().cloned());
        }
        if let Expr::ScalarSubquery(sq) = x {
            let inner = node(&sq.subquery, uses, scope.inner_outer);
            if let Some(first) = inner.first() {
                sources.extend(first.sources.iter().cloned());
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    let direct = match unwrap_passthrough(e) {
        Expr::Column(c) => (scope.resolve)(c).is_some_and(|d| d.direct),
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

fn record_uses(e: &Expr, scope: &Scope, uses: &mut BTreeSet<Use>) {
    let _ = e.apply(|x| {
        if let Some((Some(d), line)) = scope.leaf(x) {
            for source in &d.sources {
                uses.insert(Use {
                    column: source.clone(),
                    line,
                });
            }
        }
        // A subquery's own uses (its derivation is taken by `expression`).
        match x {
            Expr::ScalarSubquery(sq) => {
                node(&sq.subquery, uses, scope.inner_outer);
            }
            Expr::Exists(ex) => {
                node(&ex.subquery.subquery, uses, scope.inner_outer);
            }
            Expr::InSubquery(ins) => {
                node(&ins.subquery.subquery, uses, scope.inner_outer);
            }
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::empty::EmptyTable;

    use super::*;
    use crate::engine::{new_session, register_table};

    async fn lineage(sql: &str) -> QueryLineage {
        let session = new_session();
        let table = |cols: &[&str]| {
            let fields: Vec<Field> = cols
                .iter()
                .map(|c| Field::new(*c, DataType::Int64, true))
                .collect();
            Arc::new(EmptyTable::new(Arc::new(Schema::new(fields))))
        };
        for (name, cols) in [
            ("s.o", &["id", "cust", "amount"][..]),
            ("s.c", &["cust", "tier"][..]),
        ] {
            register_table(&session, &TableName::parse(name).unwrap(), table(cols)).unwrap();
        }
        let plan = session.state().create_logical_plan(sql).await.unwrap();
        query_lineage(&plan)
    }

    fn sources(l: &QueryLineage, i: usize) -> Vec<String> {
        l.outputs[i]
            .1
            .sources
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[tokio::test]
    async fn joins_aggregates_unions_and_outer_references() {
        let l = lineage(
            "SELECT c.tier, sum(o.amount) AS total\nFROM s.o o JOIN s.c c ON o.cust = c.cust\nGROUP BY c.tier",
        )
        .await;
        assert_eq!(l.outputs[0].0, "tier");
        assert_eq!(sources(&l, 0), vec!["s.c.tier"]);
        assert!(l.outputs[0].1.direct);
        assert_eq!(sources(&l, 1), vec!["s.o.amount"]);
        assert!(!l.outputs[1].1.direct);
        // The join keys are used on line 2 even though no output derives from them.
        assert!(l.uses.contains(&Use {
            column: ColumnRef::parse("s.o.cust").unwrap(),
            line: Some(2)
        }));

        let l = lineage("SELECT id + cust AS x FROM s.o UNION ALL SELECT cust * 2 FROM s.c").await;
        assert_eq!(sources(&l, 0), vec!["s.c.cust", "s.o.cust", "s.o.id"]);
        assert_eq!(l.outputs[0].2, "s.o.id + s.o.cust | s.c.cust * Int64(2)");

        // A correlated subquery's reference to the outer table is a use of it.
        let l = lineage(
            "SELECT o.id FROM s.o o\nWHERE EXISTS (SELECT 1 FROM s.c c\n  WHERE c.cust = o.cust)",
        )
        .await;
        let used: Vec<String> = l.uses.iter().map(|u| u.column.to_string()).collect();
        assert!(used.contains(&"s.o.cust".to_string()), "{used:?}");
        assert!(used.contains(&"s.c.cust".to_string()), "{used:?}");
    }
}
