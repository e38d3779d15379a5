//! `pipeline sql "DELETE FROM ns.table WHERE ..."` and `"UPDATE ns.table SET c = expr WHERE
//! ..."`: rows removed or changed copy-on-write. Every live data file that may hold a matching
//! row (Iceberg prunes by partition and column bounds) is read whole; a file with a match is
//! rewritten (without those rows, or with their new values) and replaced in one `overwrite`
//! snapshot, files without a match stay as they are. No delete files are written,
//! so every Iceberg reader sees the change. The snapshot keeps the table's lineage and
//! incremental keys (a transform's table is not recomputed because of it) and is published
//! with a run record of kind `sql` (who, why, the statement, rows removed): `pipeline
//! rollback` undoes it, and the next run recomputes downstream only the partitions whose
//! files changed.

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::common::DFSchema;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, Delete, Expr as SqlExpr, FromTable, Statement, TableFactor, TableWithJoins,
    Update,
};
use iceberg::arrow::schema_to_arrow_schema;

use super::rewrite_rows::{compile_condition, true_rows, Edit, Rewrite, RewrittenTable};
use crate::catalog::PipelineCatalog;
use crate::commit::publish::{Publication, TableChange};
use crate::commit::StagedTable;
use crate::engine::{admit, expression, Entry};
use crate::error::{Error, Result};
use crate::operation::{
    operate, Identity, Observer, Opened, Opening, RunStart, Staging, TableOperation,
};
use crate::records::{Invocation, RunKind, RunRecord, TableRecord};
use crate::spec::TableName;

/// What a row change did to its table, beside the run record.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RowChange {
    /// The run record published; `None` when no row matched and nothing changed.
    pub record: Option<RunRecord>,
    /// `delete` or `update`.
    pub statement: &'static str,
    /// Rows deleted or updated.
    pub rows: u64,
    /// Data files rewritten without the rows (the others were not touched).
    pub files_rewritten: u64,
    /// Live data files of the table before the change.
    pub files_in_table: u64,
    pub bytes_rewritten: u64,
}

/// What to do to the rows that match.
#[derive(Debug, Clone, PartialEq)]
pub enum RowEdit {
    Delete,
    /// `column = expression` (SQL over the row's columns), in order.
    Update(Vec<(String, String)>),
}

impl RowEdit {
    pub fn name(&self) -> &'static str {
        match self {
            RowEdit::Delete => "delete",
            RowEdit::Update(_) => "update",
        }
    }
}

/// A parsed `pipeline sql` statement: the table, the WHERE condition (SQL), the edit.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedChange {
    pub table: TableName,
    pub condition: String,
    pub edit: RowEdit,
}

/// Applies `change` to the rows of its table where its condition is true, as run
/// `pipeline`'s change by `invocation`. Takes the pipeline's run lock.
pub async fn change_rows(
    catalog: &PipelineCatalog,
    pipeline: &str,
    change: &ParsedChange,
    invocation: &Invocation,
    observer: Arc<dyn Observer>,
) -> Result<RowChange> {
    let operation = RowChangeOperation {
        catalog,
        pipeline,
        change,
        invocation,
    };
    operate(operation, observer).await
}

/// A row change as the operation skeleton runs it: under the pipeline's run lock, the files
/// holding matching rows rewritten into one `overwrite` snapshot, published with a record of
/// kind `sql`. Another writer's commit to the table meanwhile fails it (an overwrite cannot be
/// rebased).
struct RowChangeOperation<'a> {
    catalog: &'a PipelineCatalog,
    pipeline: &'a str,
    change: &'a ParsedChange,
    invocation: &'a Invocation,
}

/// The staged change of a row change, with its record and report.
struct Changed {
    staged: Option<StagedTable>,
    entry: TableRecord,
    out: RowChange,
}

impl<'a> TableOperation<'a> for RowChangeOperation<'a> {
    type Staged = Changed;
    type Output = RowChange;

    fn opening(&self) -> Opening<'a> {
        Opening::Pipeline {
            catalog: self.catalog,
            pipeline: self.pipeline,
        }
    }

    fn identity(&self) -> Identity<'_> {
        Identity::new(RunKind::Sql, self.pipeline, self.invocation)
    }

    /// In an environment the table's branch moves: there is nothing on main to undo.
    fn describe(&self, mut record: RunRecord, _staged: &Changed) -> RunRecord {
        record.env = self.catalog.env().map(str::to_string);
        if record.env.is_some() {
            record.undo.clear();
        }
        record
    }

    async fn stage(
        &mut self,
        opened: &Opened<'a>,
        run: &RunStart,
        _observer: &Arc<dyn Observer>,
    ) -> Result<Staging<Changed, RowChange>> {
        let (catalog, change) = (&*opened.catalog, self.change);
        let location = catalog.load_existing(&change.table).await?;
        let location = location.metadata().location();
        if let Some(warehouse) = catalog.outside_warehouse(location) {
            return Err(Error::table_msg(
                &change.table,
                format!(
                    "its files are at {location}, outside this catalog's warehouse {}: the project was probably copied; nothing was changed",
                    warehouse.display()
                ),
            ));
        }
        let part = stage_row_change(catalog, self.pipeline, &run.run_id, change, false).await?;
        let out = RowChange {
            record: None,
            statement: change.edit.name(),
            rows: part.rows,
            files_rewritten: part.files_rewritten,
            files_in_table: part.files_in_table,
            bytes_rewritten: part.bytes_rewritten,
        };
        Ok(match part.staged {
            Some((staged, entry)) => Staging::Publish(Changed {
                staged: Some(staged),
                entry,
                out,
            }),
            None => Staging::Done(out),
        })
    }

    async fn publication(
        &mut self,
        catalog: &PipelineCatalog,
        staged: &mut Changed,
        record: RunRecord,
    ) -> Result<Option<Publication>> {
        let table = staged
            .staged
            .take()
            .ok_or_else(|| Error::Internal("a row change published twice".into()))?;
        Ok(Some(Publication {
            changes: vec![TableChange::publish(table, catalog.env())?],
            record: Some(record.with_tables(vec![staged.entry.clone()])),
        }))
    }

    async fn finish(
        self,
        _opened: Opened<'a>,
        staged: Changed,
        record: Option<RunRecord>,
        _observer: Arc<dyn Observer>,
    ) -> Result<RowChange> {
        Ok(RowChange {
            record,
            ..staged.out
        })
    }
}

/// Finds the rows of `change` in its table and, unless `plan_only`, rewrites the files that
/// hold them and stages the snapshot (for run `run_id` of `pipeline`); nothing is published.
/// The caller holds the pipeline's run lock.
pub(crate) async fn stage_row_change(
    catalog: &PipelineCatalog,
    pipeline: &str,
    run_id: &str,
    change: &ParsedChange,
    plan_only: bool,
) -> Result<RewrittenTable> {
    let table = &change.table;
    let predicate = change.condition.as_str();
    let loaded = catalog.load_existing(table).await?;
    let arrow_schema = schema_to_arrow_schema(loaded.metadata().current_schema())?;
    let (columns, condition, physical) = compile_condition(&arrow_schema, predicate)?;
    let edit = match &change.edit {
        RowEdit::Delete => Edit::Delete,
        RowEdit::Update(set) => {
            // For each assigned column, its position and its new value's expression.
            let df_schema = DFSchema::try_from(arrow_schema.clone())?;
            let session = SessionContext::new();
            let mut assignments = Vec::new();
            for (column, value) in set {
                let index = arrow_schema.index_of(column).map_err(|_| {
                    Error::Usage(format!(
                        "SET {column}: {table} has no column `{column}`; its columns: {}",
                        arrow_schema
                            .fields()
                            .iter()
                            .map(|f| f.name().as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
                let expr = expression(&session, value, &df_schema)
                    .map_err(|r| Error::Usage(format!("SET {column} = {value}: {r}")))?;
                let expr = session
                    .create_physical_expr(expr, &df_schema)
                    .map_err(|e| Error::Usage(format!("SET {column} = {value}: {e}")))?;
                assignments.push((index, expr));
            }
            Edit::Update(assignments)
        }
    };
    let mut matcher = |batch: &RecordBatch| true_rows(physical.as_ref(), batch, predicate);
    Rewrite {
        catalog,
        pipeline,
        run_id,
        table,
        prune: Some(condition),
        columns,
        edit,
        job: change.edit.name(),
        plan_only,
        ledger: Vec::new(),
    }
    .stage(&mut matcher)
    .await
}

/// A statement's table, its WHERE condition (if any) and its edit.
type ParsedParts = (TableName, Option<SqlExpr>, RowEdit);

/// The table, WHERE condition (as SQL) and edit of `DELETE FROM ns.table WHERE condition` or
/// `UPDATE ns.table SET column = expression, ... WHERE condition`. Anything else (no WHERE,
/// USING or FROM, several tables, RETURNING, LIMIT) is refused with what to write instead.
pub fn parse_row_change(sql: &str) -> Result<ParsedChange> {
    use datafusion::sql::parser::Statement as DFStatement;
    let usage = |m: String| Error::Usage(m);
    let admitted =
        admit(sql, Entry::RowChange).map_err(|r| usage(format!("sql: {}", r.with_line())))?;
    let DFStatement::Statement(statement) = admitted.into_statement() else {
        return Err(usage(
            "sql: pass exactly one DELETE or UPDATE statement".into(),
        ));
    };
    let statement = *statement;
    let (table, selection, edit) = match statement {
        Statement::Delete(delete) => parsed_delete(delete)?,
        Statement::Update(update) => parsed_update(update)?,
        _ => {
            return Err(usage(
                "sql: only `DELETE FROM namespace.table WHERE ...` and `UPDATE namespace.table SET column = expression WHERE ...`"
                    .into(),
            ))
        }
    };
    let condition = selection.ok_or_else(|| {
        usage(format!(
            "sql: {} {table} needs a WHERE; for every row, `WHERE true` says so",
            edit.name().to_uppercase()
        ))
    })?;
    Ok(ParsedChange {
        table,
        condition: condition.to_string(),
        edit,
    })
}

/// The one table a statement names, as `namespace.table`; joins, table functions and
/// unqualified names are refused.
fn parsed_table(t: &TableWithJoins) -> Result<TableName> {
    let TableFactor::Table { name, .. } = &t.relation else {
        return Err(Error::Usage(
            "sql: name a table, written namespace.table".into(),
        ));
    };
    if !t.joins.is_empty() {
        return Err(Error::Usage("sql: one table, without joins".into()));
    }
    TableName::parse(&name.to_string()).ok_or_else(|| {
        Error::Usage(format!(
            "sql: write the table as namespace.table (got `{name}`); `pipeline tables` lists them"
        ))
    })
}

/// The parts of a `DELETE` from one table; USING, several tables, RETURNING, ORDER BY and
/// LIMIT are refused.
fn parsed_delete(delete: Delete) -> Result<ParsedParts> {
    let from = match &delete.from {
        FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
    };
    let [one] = from.as_slice() else {
        return Err(Error::Usage("sql: DELETE from one table".into()));
    };
    if delete.using.is_some()
        || !delete.tables.is_empty()
        || delete.returning.is_some()
        || delete.limit.is_some()
        || !delete.order_by.is_empty()
    {
        return Err(Error::Usage(
            "sql: DELETE from one table, without USING, RETURNING, ORDER BY or LIMIT".into(),
        ));
    }
    Ok((parsed_table(one)?, delete.selection, RowEdit::Delete))
}

/// The parts of an `UPDATE` of one table: each `SET column = expression` as the bare column
/// name and the expression's SQL, in order; FROM, RETURNING, LIMIT and tuple targets are
/// refused.
fn parsed_update(update: Update) -> Result<ParsedParts> {
    if update.from.is_some() || update.returning.is_some() || update.limit.is_some() {
        return Err(Error::Usage(
            "sql: UPDATE one table, without FROM, RETURNING or LIMIT".into(),
        ));
    }
    let mut set = Vec::new();
    for a in &update.assignments {
        let AssignmentTarget::ColumnName(column) = &a.target else {
            return Err(Error::Usage(
                "sql: SET one column at a time: SET a = 1, b = 2".into(),
            ));
        };
        let column = column.to_string();
        let column = column
            .rsplit('.')
            .next()
            .unwrap_or(&column)
            .trim_matches('"');
        set.push((column.to_string(), a.value.to_string()));
    }
    Ok((
        parsed_table(&update.table)?,
        update.selection,
        RowEdit::Update(set),
    ))
}

#[cfg(test)]
mod tests {
    use super::{parse_row_change, RowEdit};

    #[test]
    fn deletes_and_updates_name_their_table_condition_and_edit_and_nothing_else_passes() {
        let d = parse_row_change("DELETE FROM silver.customers WHERE customer_id = 4711").unwrap();
        assert_eq!(d.table.to_string(), "silver.customers");
        assert_eq!(d.condition, "customer_id = 4711");
        assert_eq!(d.edit, RowEdit::Delete);
        let u = parse_row_change(
            "UPDATE bronze.pos_orders SET status = 'cancelled', quantity = quantity + 1 WHERE order_id = 42",
        )
        .unwrap();
        assert_eq!(u.table.to_string(), "bronze.pos_orders");
        assert_eq!(u.condition, "order_id = 42");
        assert_eq!(
            u.edit,
            RowEdit::Update(vec![
                ("status".into(), "'cancelled'".into()),
                ("quantity".into(), "quantity + 1".into())
            ])
        );
        for bad in [
            "UPDATE silver.customers SET name = 'x'",
            "DELETE FROM silver.customers",
            "DELETE FROM customers WHERE customer_id = 1",
            "SELECT 1",
            "DELETE FROM silver.a WHERE x = 1; DELETE FROM silver.b WHERE x = 1",
        ] {
            assert!(parse_row_change(bad).is_err(), "{bad}");
        }
    }
}
