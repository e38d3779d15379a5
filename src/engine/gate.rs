//! The one gate every SQL string passes before the engine plans or runs it: transforms,
//! expectations (and the checks the engine writes around their values), readers' SQL,
//! `pipeline query`, the MCP `query` tool, the docs site, `pipeline sql` and the conditions of
//! `erase` and `sql`.
//!
//! ```text
//!  admit   at most 1 MiB of text, parsed (parentheses and subqueries at most 50 deep), on a
//!          thread with a stack of its own so that no input can overflow the caller's;
//!          exactly one statement, of the kind its entry point may run (a SELECT; a SELECT
//!          or EXPLAIN of one; one DELETE or UPDATE); expressions, set operations and joins
//!          nested at most MAX_NESTING deep (DataFusion walks plans recursively and would
//!          overflow a thread's stack further down); every table it reads a catalog table
//!          written `namespace.table` (never a file or a URL)
//!  plan    planned against the tables the caller registered (only those it names), and the
//!          plan verified to hold no DDL, DML, COPY or other statement, and no call that would
//!          build a value over 64 MiB from constants (`repeat('x', 2000000000)`; sizes.rs)
//! ```
//!
//! What passes is an [`Admitted`] statement: nothing else can be planned here, so an entry
//! point cannot skip a step.

use std::ops::ControlFlow;

use datafusion::common::{DFSchema, TableReference};
use datafusion::execution::context::SQLOptions;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::parser::{DFParserBuilder, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{
    Expr as SqlExpr, ExprWithAlias, Query, SetExpr, Spanned, Statement, Visit, Visitor,
};

mod sizes;

use super::message::clean_message;
use crate::spec::{is_identifier, TableName};

/// The longest SQL string the gate reads.
pub const MAX_SQL_BYTES: usize = 1 << 20;

/// How deep expressions (and set operations and joins) may nest: DuckDB's
/// `max_expression_depth` is 1000; DataFusion formats and walks expressions recursively and
/// overflows an 8 MiB stack in a debug build near 2,000 terms of `1+1+...`, so the limit
/// stays well below what every thread the engine plans on can hold.
pub const MAX_NESTING: usize = 256;

/// Parentheses and subqueries nest at most this deep (DataFusion's own parser limit).
const PARSER_RECURSION_LIMIT: usize = 50;

/// The stack of the thread that parses: a refused input of 1 MiB is an expression a few
/// hundred thousand levels deep, dropped there. Reserved, not committed, memory.
const GATE_STACK_BYTES: usize = 1 << 30;

/// Where a SQL string comes from: what it may do, and how a refusal names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// A transform (`sql/NAME/*.sql`): one SELECT.
    Transform,
    /// An expectation (`[[expect]] check = "sql"`, and the checks the engine writes around
    /// an expectation's columns and values): one SELECT.
    Expectation,
    /// A reader's SQL (`[[reader]]`), planned by `pipeline plan` and the docs site, never run:
    /// one SELECT.
    Reader,
    /// `pipeline query` and the MCP `query` tool: one SELECT, or `EXPLAIN [ANALYZE]` of one.
    Query,
    /// `pipeline sql`: one DELETE or UPDATE (executed by the engine, copy-on-write).
    RowChange,
}

impl Entry {
    /// `a transform`, `a query`, ...
    fn what(self) -> &'static str {
        match self {
            Entry::Transform => "a transform",
            Entry::Expectation => "an expectation's SQL",
            Entry::Reader => "a reader's SQL",
            Entry::Query => "a query",
            Entry::RowChange => "`pipeline sql`",
        }
    }

    /// What the entry point may run, in words.
    fn allowed(self) -> &'static str {
        match self {
            Entry::Transform => "a SELECT (a query reading catalog tables)",
            Entry::Expectation => "a SELECT (returning the violating rows)",
            Entry::Reader => "a SELECT",
            Entry::Query => "a SELECT (or EXPLAIN [ANALYZE] of one)",
            Entry::RowChange => "one DELETE or UPDATE",
        }
    }

    /// Whether the entry point may run `statement` (its kind only).
    fn allows(self, statement: &DFStatement) -> bool {
        match (self, statement) {
            (Entry::RowChange, DFStatement::Statement(s)) => {
                matches!(**s, Statement::Delete(_) | Statement::Update(_))
            }
            (Entry::RowChange, _) => false,
            (Entry::Query, DFStatement::Explain(e)) => is_select(&e.statement),
            (_, statement) => is_select(statement),
        }
    }
}

/// A query whose every part reads: SELECTs, set operations, VALUES and TABLE, in CTEs and
/// subqueries of its body too (`WITH x AS (...) INSERT ...` parses as a query; it is not one).
/// Walked without recursion (a chain of UNIONs is as deep as it is long).
fn is_select(statement: &DFStatement) -> bool {
    let DFStatement::Statement(s) = statement else {
        return false;
    };
    let Statement::Query(query) = &**s else {
        return false;
    };
    let mut queries: Vec<&Query> = vec![query];
    let mut bodies: Vec<&SetExpr> = Vec::new();
    while let Some(query) = queries.pop() {
        if let Some(with) = &query.with {
            queries.extend(with.cte_tables.iter().map(|cte| cte.query.as_ref()));
        }
        bodies.push(&query.body);
        while let Some(body) = bodies.pop() {
            match body {
                SetExpr::Select(_) | SetExpr::Values(_) | SetExpr::Table(_) => {}
                SetExpr::Query(inner) => queries.push(inner),
                SetExpr::SetOperation { left, right, .. } => {
                    bodies.push(left);
                    bodies.push(right);
                }
                _ => return false,
            }
        }
    }
    true
}

/// Why the gate refused a SQL string, in words, with the line of the SQL where known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub message: String,
    /// 1-based line in the SQL text.
    pub line: Option<usize>,
}

impl Refusal {
    fn new(message: impl Into<String>) -> Refusal {
        Refusal {
            message: message.into(),
            line: None,
        }
    }

    fn at(mut self, line: Option<usize>) -> Refusal {
        self.line = line.filter(|l| *l > 0);
        self
    }

    /// `message` with ` (line N)` when the line is known: for callers whose own message
    /// names no SQL file.
    pub fn with_line(&self) -> String {
        match self.line {
            Some(line) => format!("{} (line {line})", self.message),
            None => self.message.clone(),
        }
    }
}

/// A statement the gate admitted: one statement of its entry point's kind, nested within the
/// limits, reading only the catalog tables in [`Admitted::tables`].
#[derive(Debug, Clone)]
pub struct Admitted {
    statement: DFStatement,
    tables: Vec<TableName>,
    entry: Entry,
}

impl Admitted {
    /// The catalog tables the statement reads (or changes), each once, sorted: the caller
    /// registers these and no others.
    pub fn tables(&self) -> &[TableName] {
        &self.tables
    }

    /// The parsed statement.
    pub fn statement(&self) -> &DFStatement {
        &self.statement
    }

    /// The parsed statement, for an entry point that executes it itself (`pipeline sql`).
    pub fn into_statement(self) -> DFStatement {
        self.statement
    }
}

/// Admits `sql` for `entry`, or says why not (see the module doc). Never overflows the
/// caller's stack, whatever the input.
pub fn admit(sql: &str, entry: Entry) -> Result<Admitted, Refusal> {
    check_size(sql, entry)?;
    on_gate_stack(|| {
        let mut statements = DFParserBuilder::new(sql)
            .with_recursion_limit(PARSER_RECURSION_LIMIT)
            .build()
            .and_then(|mut p| p.parse_statements())
            .map_err(parse_refusal)?;
        if statements.len() != 1 {
            return Err(Refusal::new(format!(
                "{} is exactly one statement, {}; found {}",
                entry.what(),
                entry.allowed(),
                statements.len()
            )));
        }
        let statement = statements.pop_front().expect("one statement");
        if !entry.allows(&statement) {
            return Err(Refusal::new(format!(
                "{} must be {}; found `{} ...`",
                entry.what(),
                entry.allowed(),
                first_words(&statement)
            )));
        }
        check_depth(&statement)?;
        let (references, _) = datafusion::sql::resolve::resolve_table_references(&statement, true)
            .map_err(|e| Refusal::new(clean_message(&e)))?;
        let mut tables = Vec::new();
        for reference in references {
            let table = catalog_table(&reference, entry)?;
            if !tables.contains(&table) {
                tables.push(table);
            }
        }
        Ok(Admitted {
            statement,
            tables,
            entry,
        })
    })
}

/// Admits a SQL expression (a condition, a SET value): at most 1 MiB, nested within the
/// limits, nothing after it.
pub fn admit_expression(sql: &str) -> Result<ExprWithAlias, Refusal> {
    check_size(sql, Entry::RowChange)?;
    on_gate_stack(|| {
        let expr = DFParserBuilder::new(sql)
            .with_recursion_limit(PARSER_RECURSION_LIMIT)
            .build()
            .and_then(|mut p| p.parse_into_expr())
            .map_err(parse_refusal)?;
        let mut depth = Depth::default();
        if let ControlFlow::Break(refusal) = expr.expr.visit(&mut depth) {
            return Err(refusal);
        }
        Ok(expr)
    })
}

/// Plans an admitted statement against the tables registered in `state`, and verifies that
/// the plan only reads.
pub async fn plan(state: &SessionState, admitted: Admitted) -> Result<LogicalPlan, Refusal> {
    let entry = admitted.entry;
    if entry == Entry::RowChange {
        return Err(Refusal::new(
            "`pipeline sql` statements are executed by the engine copy-on-write, never planned as DataFusion DML",
        ));
    }
    let plan = state
        .statement_to_plan(admitted.statement)
        .await
        .map_err(|e| {
            let line = e
                .diagnostic()
                .and_then(|d| d.span)
                .map(|s| s.start.line as usize);
            Refusal::new(clean_message(&e)).at(line.or_else(|| line_of(&e.to_string())))
        })?;
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
        .verify_plan(&plan)
        .map_err(|e| {
            Refusal::new(format!(
                "{} may only read: {}",
                entry.what(),
                clean_message(&e)
            ))
        })?;
    if let Some(big) = sizes::too_large_in_plan(&plan) {
        return Err(too_large(big));
    }
    Ok(plan)
}

/// The refusal of a call that would build `big` from constants.
fn too_large(big: sizes::TooLarge) -> Refusal {
    Refusal::new(format!(
        "`{}` would build a value of about {} MiB from the query's constants; one value may be at most {} MiB: use smaller arguments",
        big.function,
        big.bytes >> 20,
        sizes::MAX_CONSTANT_BYTES >> 20
    ))
}

/// Admits `sql` for `entry`, plans it in `ctx` and returns it ready to run: what the engine's
/// own checks (expectations) use instead of `SessionContext::sql`.
pub async fn query(ctx: &SessionContext, sql: &str, entry: Entry) -> Result<DataFrame, Refusal> {
    let admitted = admit(sql, entry)?;
    let state = ctx.state();
    let plan = plan(&state, admitted).await?;
    ctx.execute_logical_plan(plan)
        .await
        .map_err(|e| Refusal::new(clean_message(&e)))
}

/// Plans an admitted expression over `schema` (no tables: a subquery does not plan).
pub fn plan_expression(
    state: &SessionState,
    expr: ExprWithAlias,
    schema: &DFSchema,
) -> Result<Expr, Refusal> {
    let expr = state
        .create_logical_expr_from_sql_expr(expr, schema)
        .map_err(|e| Refusal::new(clean_message(&e)))?;
    match sizes::too_large(&expr) {
        Some(big) => Err(too_large(big)),
        None => Ok(expr),
    }
}

/// Admits the SQL expression `sql` and plans it over `schema` ([`admit_expression`], then
/// [`plan_expression`]).
pub fn expression(ctx: &SessionContext, sql: &str, schema: &DFSchema) -> Result<Expr, Refusal> {
    let admitted = admit_expression(sql)?;
    plan_expression(&ctx.state(), admitted, schema)
}

fn check_size(sql: &str, entry: Entry) -> Result<(), Refusal> {
    if sql.len() > MAX_SQL_BYTES {
        return Err(Refusal::new(format!(
            "{} is {} KiB of text; the limit is {} KiB: split it (CTEs, or several transforms)",
            entry.what(),
            sql.len() / 1024,
            MAX_SQL_BYTES / 1024
        )));
    }
    Ok(())
}

/// Runs `work` on a thread with a large stack of its own: the parser builds a long chain of
/// `+` or `OR` into a tree as deep as the chain is long, and walking or dropping it recurses.
fn on_gate_stack<T: Send>(work: impl FnOnce() -> Result<T, Refusal> + Send) -> Result<T, Refusal> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("sql-gate".into())
            .stack_size(GATE_STACK_BYTES)
            .spawn_scoped(scope, work)
            .map_err(|e| Refusal::new(format!("cannot start the SQL parser's thread: {e}")))?
            .join()
            .unwrap_or_else(|_| Err(Refusal::new("the SQL parser failed on this input")))
    })
}

fn parse_refusal(e: datafusion::error::DataFusionError) -> Refusal {
    let text = e.to_string();
    if text.contains("RecursionLimitExceeded") {
        return Refusal::new(format!(
            "parentheses, function calls or subqueries nest more than {PARSER_RECURSION_LIMIT} levels deep (the limit): flatten them, e.g. with a CTE"
        ));
    }
    Refusal::new(clean_message(&e)).at(line_of(&text))
}

/// `... at Line: 3, Column: 5` -> 3.
pub fn line_of(message: &str) -> Option<usize> {
    let rest = &message[message.find("Line: ")? + 6..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The first three words of a statement, to say what it is (`COPY (SELECT * ...`).
fn first_words(statement: &DFStatement) -> String {
    statement
        .to_string()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A table reference as a catalog table, or why it is not one.
fn catalog_table(reference: &TableReference, entry: Entry) -> Result<TableName, Refusal> {
    // Any two-part name: only tables the caller registers exist (the audits register views
    // under names no catalog table can have).
    let name = match reference {
        TableReference::Partial { schema, table } if !schema.is_empty() && !table.is_empty() => {
            Some(TableName {
                namespace: schema.to_string(),
                name: table.to_string(),
            })
        }
        _ => None,
    };
    name.ok_or_else(|| {
        let readers = match entry {
            Entry::Transform => "transforms read",
            Entry::Expectation => "expectations read",
            Entry::Reader => "readers read",
            Entry::Query => "queries read",
            Entry::RowChange => "`pipeline sql` changes",
        };
        Refusal::new(if is_identifier(reference.table()) && reference.schema().is_none() {
            format!(
                "table `{reference}` must be written namespace.table (e.g. bronze.{}); {readers} only catalog tables",
                reference.table()
            )
        } else {
            format!(
                "`{reference}` is not a catalog table: {readers} only catalog tables, written namespace.table (e.g. bronze.orders), never files or URLs"
            )
        })
    })
}

fn check_depth(statement: &DFStatement) -> Result<(), Refusal> {
    let inner = match statement {
        DFStatement::Statement(s) => s,
        DFStatement::Explain(e) => return check_depth(&e.statement),
        _ => return Ok(()),
    };
    match inner.visit(&mut Depth::default()) {
        ControlFlow::Break(refusal) => Err(refusal),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Counts how deep expressions and queries nest while the AST is walked; stops (so the walk
/// itself stays shallow) at the first place deeper than [`MAX_NESTING`].
#[derive(Default)]
struct Depth {
    now: usize,
}

impl Depth {
    fn too_deep(what: &str, line: u64) -> Refusal {
        Refusal::new(format!(
            "{what} nest more than {MAX_NESTING} levels deep (the limit): each term of a chain of `+`, `OR` or `UNION` is one level; write `x IN (a, b, ...)`, or split the chain with a CTE"
        ))
        .at(Some(line as usize))
    }
}

/// The line where a long chain starts: its first operand, found by walking down the chain's
/// left side without recursion (`Spanned::span` would recurse through the whole chain).
fn first_line(expr: &SqlExpr) -> u64 {
    let mut at = expr;
    loop {
        at = match at {
            SqlExpr::BinaryOp { left, .. } => left,
            SqlExpr::Cast { expr, .. }
            | SqlExpr::IsNull(expr)
            | SqlExpr::IsNotNull(expr)
            | SqlExpr::IsTrue(expr)
            | SqlExpr::IsFalse(expr)
            | SqlExpr::Collate { expr, .. } => expr,
            SqlExpr::Identifier(_) | SqlExpr::CompoundIdentifier(_) | SqlExpr::Value(_) => {
                return at.span().start.line
            }
            _ => return 0,
        }
    }
}

/// The line of the first SELECT of a chain of set operations, found without recursion.
fn first_select_line(body: &SetExpr) -> u64 {
    let mut at = body;
    loop {
        at = match at {
            SetExpr::SetOperation { left, .. } => left,
            SetExpr::Select(select) => return select.select_token.0.span.start.line,
            _ => return 0,
        }
    }
}

impl Visitor for Depth {
    type Break = Refusal;

    fn pre_visit_expr(&mut self, expr: &SqlExpr) -> ControlFlow<Refusal> {
        self.now += 1;
        if self.now > MAX_NESTING {
            return ControlFlow::Break(Depth::too_deep("expressions", first_line(expr)));
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _expr: &SqlExpr) -> ControlFlow<Refusal> {
        self.now -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<Refusal> {
        self.now += 1;
        // Set operations and joins chain without parentheses: measured without recursion.
        let mut stack = vec![(query.body.as_ref(), self.now)];
        while let Some((body, depth)) = stack.pop() {
            if depth > MAX_NESTING {
                let line = first_select_line(&query.body);
                return ControlFlow::Break(Depth::too_deep(
                    "set operations (UNION, ...) and subqueries",
                    line,
                ));
            }
            match body {
                SetExpr::SetOperation { left, right, .. } => {
                    stack.push((left, depth + 1));
                    stack.push((right, depth + 1));
                }
                SetExpr::Select(select) => {
                    if let Some(from) = select
                        .from
                        .iter()
                        .find(|from| depth + from.joins.len() > MAX_NESTING)
                    {
                        let line = from.relation.span().start.line;
                        return ControlFlow::Break(Depth::too_deep("joins", line));
                    }
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<Refusal> {
        self.now -= 1;
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests;
