//! The SQL of each expectation, as the audit runs it: the SELECT of the violating rows (of the
//! whole table, or of the rows a run wrote), a cheaper count where listing is costly, and the
//! rule a later run compares with. Every statement here goes through the SQL gate when it runs
//! ([`check_expectations`] admits them all when a pipeline is validated).

use std::collections::HashMap;

use arrow::datatypes::SchemaRef;

use crate::engine::{admit, plan, session_over, Entry};
use crate::error::{Error, Result};
use crate::spec::{quote_ident, violation_predicate, Check, Expectation, TableName};

/// The SELECT of the rows of `from` that break a row-level check. `relationships` is a
/// `NOT EXISTS` (both sides without NULLs, so the rows `NOT IN` selects): a plain anti join,
/// which the planner builds on the smaller side, where `NOT IN`'s null-aware join builds on
/// the checked table, however large.
pub(super) fn row_violations_sql(check: &Check, from: &TableName) -> Option<String> {
    let f = from.quoted();
    if let Check::Relationships {
        column,
        to_table,
        to_column,
    } = check
    {
        return Some(format!(
            "SELECT t.* FROM {f} t WHERE t.{0} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {1} r WHERE r.{2} = t.{0})",
            quote_ident(column),
            to_table.quoted(),
            quote_ident(to_column)
        ));
    }
    violation_predicate(check).map(|predicate| format!("SELECT * FROM {f} WHERE {predicate}"))
}

/// The SELECT of violating rows, or `None` for checks that look at the table as a whole.
pub(super) fn violations_sql(e: &Expectation) -> Option<String> {
    let t = e.table.quoted();
    if let Some(sql) = row_violations_sql(&e.check, &e.table) {
        return Some(sql);
    }
    Some(match &e.check {
        Check::Unique { columns } => {
            let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
            let on: Vec<String> = columns
                .iter()
                .map(|c| format!("t.{0} = d.{0}", quote_ident(c)))
                .collect();
            format!(
                "SELECT t.* FROM {t} t JOIN (SELECT {0} FROM {t} GROUP BY {0} HAVING count(*) > 1) d ON {1}",
                cols.join(", "),
                on.join(" AND ")
            )
        }
        Check::Sql { sql } => sql.trim().trim_end_matches(';').to_string(),
        _ => return None,
    })
}

/// A cheaper query counting the violating rows than listing them: it reads only the columns
/// the check looks at (the listing reads every column), and the rows are then listed only
/// when there are some, stopping at the sample. `sql` checks have none (they are counted
/// as listed).
pub(super) fn count_sql(e: &Expectation) -> Option<String> {
    if let Some(sql) = row_violations_sql(&e.check, &e.table) {
        return Some(count_of(&sql));
    }
    match &e.check {
        Check::Unique { columns } => {
            let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
            Some(format!(
                "SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM (SELECT count(*) AS n FROM {} GROUP BY {} HAVING count(*) > 1)",
                e.table.quoted(),
                cols.join(", ")
            ))
        }
        _ => None,
    }
}

/// The number of rows the SELECT `sql` lists.
fn count_of(sql: &str) -> String {
    format!("SELECT count(*) FROM ({sql})")
}

/// Groups of rows sharing a key of `columns` that are duplicated and include a row of
/// `written` (the rows this run wrote, as a view of `table`), one row (`select`) per group:
/// a semi-join, so only the written keys are grouped, not the whole table. `narrow`: a
/// predicate on `t` that every row sharing a written key meets (the key ranges of the written
/// rows), so the scan of the table may skip what lies outside it.
fn written_duplicates(
    select: &str,
    columns: &[String],
    table: &TableName,
    written: &TableName,
    narrow: Option<&str>,
) -> String {
    let keys: Vec<String> = columns
        .iter()
        .map(|c| format!("t.{}", quote_ident(c)))
        .collect();
    let matched: Vec<String> = columns
        .iter()
        .map(|c| format!("w.{0} IS NOT DISTINCT FROM t.{0}", quote_ident(c)))
        .collect();
    let narrow = narrow.map(|p| format!("{p} AND ")).unwrap_or_default();
    format!(
        "SELECT {select} FROM {t} t WHERE {narrow}EXISTS (SELECT 1 FROM {w} w WHERE {matched}) GROUP BY {keys} HAVING count(*) > 1",
        t = table.quoted(),
        w = written.quoted(),
        matched = matched.join(" AND "),
        keys = keys.join(", "),
    )
}

/// [`violations_sql`] and [`count_sql`] for the rows this run wrote (`written`, a view of the
/// table), for a check the published rows already passed: a row-level check looks at the
/// written rows only; `unique` at the keys they hold, wherever else those keys are (`narrow`:
/// a predicate on the table's rows `t` that every row holding a written key meets).
pub(super) fn written_sql(
    e: &Expectation,
    written: &TableName,
    narrow: Option<&str>,
) -> (Option<String>, Option<String>) {
    if let Some(sql) = row_violations_sql(&e.check, written) {
        let count = count_of(&sql);
        return (Some(sql), Some(count));
    }
    let Check::Unique { columns } = &e.check else {
        return (violations_sql(e), count_sql(e));
    };
    let keys: Vec<String> = columns
        .iter()
        .map(|c| format!("t.{}", quote_ident(c)))
        .collect();
    let on: Vec<String> = columns
        .iter()
        .map(|c| format!("t.{0} = d.{0}", quote_ident(c)))
        .collect();
    let listing = format!(
        "SELECT t.* FROM {} t JOIN ({}) d ON {}",
        e.table.quoted(),
        written_duplicates(&keys.join(", "), columns, &e.table, written, narrow),
        on.join(" AND ")
    );
    let count = format!(
        "SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM ({})",
        written_duplicates("count(*) AS n", columns, &e.table, written, narrow)
    );
    (Some(listing), Some(count))
}

/// The rule of a row-level check: its whole-table SQL (`None` for checks on the table as a
/// whole and for `sql` checks, which are always evaluated on the whole table).
pub(super) fn rule_of(e: &Expectation) -> Option<String> {
    match e.check {
        Check::Sql { .. } => None,
        _ => violations_sql(e),
    }
}

/// Admits the SQL of every expectation in `expectations` through the SQL gate (one SELECT,
/// nested within the limits, reading only catalog tables), and plans it where `schemas` has
/// every table it reads, so that `pipeline validate` refuses what the audit would refuse.
/// Errors name the spec file and the expectation's line.
pub async fn check_expectations(
    expectations: &[Expectation],
    schemas: &HashMap<TableName, SchemaRef>,
) -> Result<()> {
    for e in expectations {
        let refused = |r: crate::engine::Refusal| Error::Pipeline {
            file: e.origin.file.clone(),
            message: format!(
                "line {}: expectation `{}` on {}: {}",
                e.origin.line,
                e.name,
                e.table,
                r.with_line()
            ),
            hint: None,
        };
        for sql in [violations_sql(e), count_sql(e)].into_iter().flatten() {
            let admitted = admit(&sql, Entry::Expectation).map_err(refused)?;
            if admitted.tables().iter().all(|t| schemas.contains_key(t)) {
                let session = session_over(schemas, admitted.tables())?;
                plan(&session.state(), admitted).await.map_err(refused)?;
            }
        }
    }
    Ok(())
}
