//! A parsed transform planned against registered tables (DataFusion's logical plan), and the
//! columns it produces as Iceberg will store them.

use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;

use super::parse::ParsedTransform;
use crate::commit::DesiredColumn;
use crate::engine::plan;
use crate::error::{Error, Result};
use crate::spec::TransformJob;
use crate::write::iceberg_compatible_schema;

/// The logical plan of a parsed transform against the tables registered in `ctx`, verified by
/// the SQL gate to only read.
pub async fn logical_plan(
    ctx: &SessionContext,
    job: &TransformJob,
    parsed: &ParsedTransform,
) -> Result<LogicalPlan> {
    plan(&ctx.state(), parsed.admitted.clone())
        .await
        .map_err(|r| Error::Sql {
            file: job.sql_file.clone(),
            line: r
                .line
                .or_else(|| line_of_named_field(&job.sql, &r.message))
                .or_else(|| line_of_quoted_name(&job.sql, &r.message)),
            message: r.message,
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

/// For a message naming something in quotes (`Invalid function 'foo'`, `table 'x' not found`),
/// the first line of the SQL that mentions the first such name as a word.
fn line_of_quoted_name(sql: &str, message: &str) -> Option<usize> {
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let lower = sql.to_ascii_lowercase();
    for quote in ['\'', '"', '`'] {
        for name in message.split(quote).skip(1).step_by(2) {
            let name = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
            if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let line = lower.lines().position(|line| {
                line.match_indices(&name).any(|(i, _)| {
                    !is_word(line[..i].chars().next_back())
                        && !is_word(line[i + name.len()..].chars().next())
                })
            });
            if let Some(line) = line {
                return Some(line + 1);
            }
        }
    }
    None
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
