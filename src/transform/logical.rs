//! A parsed transform planned against registered tables (DataFusion's logical plan), and the
//! columns it produces as Iceberg will store them.

use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;

use super::parse::ParsedTransform;
use crate::commit::DesiredColumn;
use crate::engine::{line_naming, line_of_quoted_name, plan};
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

/// For `No field named x` or `Unsupported SQL type x`, the first line of the SQL that names
/// `x`.
fn line_of_named_field(sql: &str, message: &str) -> Option<usize> {
    ["No field named ", "Unsupported SQL type "]
        .iter()
        .find_map(|prefix| {
            let rest = &message[message.find(prefix)? + prefix.len()..];
            let qualified = rest
                .split(". Valid fields")
                .next()?
                .split_whitespace()
                .next()?
                .trim_end_matches('.');
            line_naming(sql, qualified.rsplit('.').next()?.trim_matches('"'))
        })
}

/// True when running `plan` holds all of its input rows at once somewhere: a window function
/// or a sort without a limit (both sort everything before the first row comes out, and spill
/// to disk past their memory). Such a query, recomputed whole, gains from running in batches
/// (`plan::batches`); joins and aggregations hold only their keys and stream.
pub fn sorts_all_rows(plan: &LogicalPlan) -> bool {
    use datafusion::common::tree_node::TreeNode;
    plan.exists(|node| {
        Ok(match node {
            LogicalPlan::Window(_) => true,
            LogicalPlan::Sort(sort) => sort.fetch.is_none(),
            _ => false,
        })
    })
    .unwrap_or(false)
}
