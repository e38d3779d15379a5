//! A transform's SQL checked to be exactly one `SELECT`, and the catalog tables it reads (its
//! dependencies, from DataFusion's parser, never hand-written).

use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::Statement;

use crate::engine::clean_message;
use crate::error::{Error, Result};
use crate::spec::{is_identifier, TableName, TransformJob};

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
            let message = if is_identifier(r.table()) {
                format!(
                    "table `{r}` must be written namespace.table (e.g. bronze.{}); transforms read only catalog tables",
                    r.table()
                )
            } else {
                format!(
                    "`{r}` is not a catalog table: transforms read only catalog tables, written namespace.table (e.g. bronze.orders), never files or URLs"
                )
            };
            sql_error(None, message)
        })?;
        if !inputs.contains(&name) {
            inputs.push(name);
        }
    }
    Ok(ParsedTransform { statement, inputs })
}

/// `... at Line: 3, Column: 5` -> 3.
pub(super) fn line_of(message: &str) -> Option<usize> {
    let rest = &message[message.find("Line: ")? + 6..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}
