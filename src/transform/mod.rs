//! Transforms: one DataFusion SQL `SELECT` per job, reading only catalog tables.
//!
//! [`parse_transform`] checks the SQL is exactly one query and finds the tables it reads (the
//! dependencies, from DataFusion's parser, never hand-written). [`plan_transform`] plans it
//! against registered tables; [`run_transform`] streams the result into a staged full refresh.

mod drop;
mod range_filter;
mod row_count;
mod session;
mod window_rule;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use datafusion::common::TableReference;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::Statement;
use futures::StreamExt;

pub use drop::{
    quarantine_columns as transform_quarantine_columns, tag_violations, QUARANTINE_EXTRA,
};
pub use range_filter::range_predicate;
pub use row_count::CountedTable;
pub use session::{new_session, register_table, session_over};

use crate::commit::{
    prepare_target, stage_snapshot, DesiredColumn, Evolution, PartitionRange, StagedTable,
    WriteMode,
};
use crate::context::JobContext;
use crate::error::{Error, Result};
use crate::spec::{TableName, TransformJob};
use crate::write::{iceberg_compatible_schema, TableWriter};

/// A transform's SQL, checked to be one SELECT, with the tables it reads.
#[derive(Debug, Clone)]
pub struct ParsedTransform {
    pub statement: DFStatement,
    pub inputs: Vec<TableName>,
}

/// Parses and checks a transform's SQL: exactly one SELECT whose table references are all
/// `namespace.table`. Errors name the SQL file and, where the parser knows it, the line.
pub fn parse_transform(job: &TransformJob) -> Result<ParsedTransform> {
    let sql_error = |line: Option<usize>, message: String| Error::Sql {
        file: job.sql_file.clone(),
        line,
        message,
    };
    let mut statements = DFParser::parse_sql(&job.sql)
        .map_err(|e| sql_error(line_of(&e.to_string()), clean_message(&e)))?;
    if statements.len() != 1 {
        return Err(sql_error(
            None,
            format!(
                "a transform is exactly one SELECT statement; found {}",
                statements.len()
            ),
        ));
    }
    let statement = statements.pop_front().expect("one statement");
    let is_query =
        matches!(&statement, DFStatement::Statement(s) if matches!(**s, Statement::Query(_)));
    if !is_query {
        let kind = statement.to_string();
        let kind: String = kind
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        return Err(sql_error(
            None,
            format!(
                "a transform must be a SELECT (a query reading catalog tables); found `{kind} ...`"
            ),
        ));
    }
    let references = SessionContext::new()
        .state()
        .resolve_table_references(&statement)
        .map_err(|e| sql_error(None, clean_message(&e)))?;
    let mut inputs = Vec::new();
    for r in references {
        let name = match &r {
            TableReference::Partial { schema, table } => {
                TableName::parse(&format!("{schema}.{table}"))
            }
            _ => None,
        };
        let name = name.ok_or_else(|| {
            sql_error(
                None,
                format!(
                    "table `{r}` must be written namespace.table (e.g. bronze.{}); transforms read only catalog tables",
                    r.table()
                ),
            )
        })?;
        if !inputs.contains(&name) {
            inputs.push(name);
        }
    }
    Ok(ParsedTransform { statement, inputs })
}

/// Plans a parsed transform against the tables registered in `ctx`.
pub async fn plan_transform(
    ctx: &SessionContext,
    job: &TransformJob,
    parsed: &ParsedTransform,
) -> Result<LogicalPlan> {
    ctx.state()
        .statement_to_plan(parsed.statement.clone())
        .await
        .map_err(|e| Error::Sql {
            file: job.sql_file.clone(),
            line: e
                .diagnostic()
                .and_then(|d| d.span)
                .map(|s| s.start.line as usize)
                .filter(|l| *l > 0)
                .or_else(|| line_of(&e.to_string()))
                .or_else(|| line_of_named_field(&job.sql, &e.to_string())),
            message: clean_message(&e),
        })
}

/// The columns a planned transform produces, as stored in Iceberg (all nullable).
pub fn output_columns(job: &TransformJob, plan: &LogicalPlan) -> Result<Vec<DesiredColumn>> {
    let arrow_schema = plan.schema().as_arrow().clone();
    let schema = iceberg_compatible_schema(&arrow_schema).map_err(|m| Error::Sql {
        file: job.sql_file.clone(),
        line: None,
        message: m,
    })?;
    let mut seen = std::collections::HashSet::new();
    schema
        .fields()
        .iter()
        .map(|f| {
            if !seen.insert(f.name().clone()) {
                return Err(Error::Sql {
                    file: job.sql_file.clone(),
                    line: None,
                    message: format!(
                        "the SELECT returns two columns named `{}`; alias one of them",
                        f.name()
                    ),
                });
            }
            Ok(DesiredColumn {
                name: f.name().clone(),
                ty: iceberg::arrow::arrow_type_to_type(f.data_type())?,
                required: false,
            })
        })
        .collect()
}

/// What a run knows about a transform beyond its spec.
#[derive(Debug, Clone, Default)]
pub struct TransformFacts {
    /// Snapshot summary properties recording the input snapshots read.
    pub properties: HashMap<String, String>,
    /// Input columns this run renames: `ns.table.old` -> `ns.table.new`.
    pub renames: BTreeMap<String, String>,
}

/// What one transform produced (staged, not yet published).
pub enum TransformOutcome {
    Staged {
        table: Box<StagedTable>,
        /// `<table>__quarantine`, when `drop` expectations apply.
        quarantine: Option<Box<StagedTable>>,
        /// Rows dropped, per expectation name.
        dropped: BTreeMap<String, u64>,
    },
    /// A partition range was asked for, but the table is new or its schema or partitioning
    /// changes: it must be recomputed whole.
    NeedsFullRefresh,
}

/// Runs a transform whose inputs are registered in `ctx` and stages its output: a full
/// overwrite, or with `range`, a replace of exactly those partitions (the output is filtered
/// to the range, so no other partition can be touched).
pub async fn run_transform(
    ctx: &JobContext,
    session: &SessionContext,
    job: &TransformJob,
    parsed: &ParsedTransform,
    range: Option<&PartitionRange>,
    facts: &TransformFacts,
    progress: Arc<AtomicU64>,
) -> Result<TransformOutcome> {
    let mut plan = plan_transform(session, job, parsed).await?;
    let columns = output_columns(job, &plan)?;
    let lineage = crate::lineage::record(&crate::lineage::query_lineage(&plan));
    let target = prepare_target(
        &ctx.catalog,
        &job.table,
        &columns,
        &job.partition_by,
        HashMap::new(),
        &Evolution::Rewrite {
            lineage: lineage.clone(),
            upstream_renames: facts.renames.clone(),
        },
    )
    .await?;
    let mode = match range {
        None => WriteMode::Overwrite,
        Some(_) if target.reshaped => return Ok(TransformOutcome::NeedsFullRefresh),
        Some(range) => {
            let source = job
                .time_partition()
                .map(|p| p.source.clone())
                .ok_or_else(|| Error::table_msg(&job.table, "has no time partition"))?;
            let predicate = range_predicate(plan.schema(), &source, &range.spans())?;
            plan = datafusion::logical_expr::LogicalPlanBuilder::from(plan)
                .filter(predicate)?
                .build()?;
            WriteMode::Replace(range.clone())
        }
    };
    let prefix = format!("{}-{}", ctx.run_id, uuid::Uuid::new_v4().simple());
    let mut writer = TableWriter::new(
        &job.table.to_string(),
        &target.metadata,
        ctx.catalog.file_io().clone(),
        job.target_file_size,
        &prefix,
    )
    .await?;
    // `drop` expectations: tagged rows go to the quarantine table, written like the table.
    let mut quarantine = None;
    if !job.drops.is_empty() {
        let q_table = job.table.quarantine();
        let q_target = prepare_target(
            &ctx.catalog,
            &q_table,
            &drop::quarantine_columns(&columns),
            &job.partition_by,
            HashMap::new(),
            &Evolution::Rewrite {
                lineage: BTreeMap::new(),
                upstream_renames: BTreeMap::new(),
            },
        )
        .await?;
        if range.is_some() && q_target.reshaped {
            return Ok(TransformOutcome::NeedsFullRefresh);
        }
        let q_writer = TableWriter::new(
            &q_table.to_string(),
            &q_target.metadata,
            ctx.catalog.file_io().clone(),
            job.target_file_size,
            &prefix,
        )
        .await?;
        plan = drop::tag_violations(session, plan, &job.drops).await?;
        quarantine = Some((q_target, q_writer));
    }
    let mut dropped = BTreeMap::new();
    let mut stream = session
        .execute_logical_plan(plan)
        .await?
        .execute_stream()
        .await
        .map_err(|e| exec_error(job, e))?;
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| exec_error(job, e))?;
        progress.fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
        match quarantine.as_mut() {
            None => writer.write(batch).await?,
            Some((_, q_writer)) => {
                let (kept, rejected) = drop::split(&batch, &ctx.run_id, &mut dropped)?;
                writer.write(kept).await?;
                if let Some(rejected) = rejected {
                    q_writer.write(rejected).await?;
                }
            }
        }
    }
    let files = writer.close().await?;
    let mut props = ctx.snapshot_properties("transform");
    props.extend(facts.properties.clone());
    props.insert(
        crate::lineage::LINEAGE_KEY.to_string(),
        serde_json::to_string(&lineage)
            .map_err(|e| Error::Usage(format!("cannot encode column lineage: {e}")))?,
    );
    let quarantine = match quarantine {
        None => None,
        Some((q_target, q_writer)) => {
            let q_files = q_writer.close().await?;
            let mut q_props = props.clone();
            q_props.remove(crate::lineage::LINEAGE_KEY);
            Some(Box::new(
                stage_snapshot(
                    q_target,
                    q_files,
                    ctx.catalog.file_io(),
                    q_props,
                    mode.clone(),
                )
                .await?,
            ))
        }
    };
    let staged = stage_snapshot(target, files, ctx.catalog.file_io(), props, mode).await?;
    Ok(TransformOutcome::Staged {
        table: Box::new(staged),
        quarantine,
        dropped,
    })
}

fn exec_error(job: &TransformJob, e: DataFusionError) -> Error {
    Error::Execution {
        file: job.sql_file.clone(),
        message: clean_message(&e),
    }
}

/// DataFusion messages without their internal prefixes and backtrace noise.
pub(crate) fn clean_message(e: &DataFusionError) -> String {
    let text = e.to_string();
    let text = text.split("\nBacktrace").next().unwrap_or(&text);
    // Parser errors arrive as `SQL error: ParserError("...")`.
    if let Some(inner) = text
        .strip_prefix("SQL error: ParserError(\"")
        .and_then(|t| t.strip_suffix("\")"))
    {
        return inner.to_string();
    }
    for prefix in ["SQL error: ", "Error during planning: ", "Schema error: "] {
        if let Some(rest) = text.strip_prefix(prefix) {
            return rest.trim().to_string();
        }
    }
    text.trim().to_string()
}

/// For `No field named x`, the first line of the SQL that mentions `x` as a word.
fn line_of_named_field(sql: &str, message: &str) -> Option<usize> {
    let rest = &message[message.find("No field named ")? + 15..];
    let qualified = rest.split(". Valid fields").next()?.trim_end_matches('.');
    let name = qualified.rsplit('.').next()?.trim_matches('"');
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let line = sql.lines().position(|line| {
        line.match_indices(name).any(|(i, _)| {
            !is_word(line[..i].chars().next_back())
                && !is_word(line[i + name.len()..].chars().next())
        })
    })?;
    Some(line + 1)
}

/// `... at Line: 3, Column: 5` -> 3.
fn line_of(message: &str) -> Option<usize> {
    let rest = &message[message.find("Line: ")? + 6..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}
