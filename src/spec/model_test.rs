//! Model tests (`tests/<pipeline>/*.toml`): input rows for a transform's input tables and the
//! rows its SQL must return, checked by `pipeline test` in memory, no catalog touched.

use std::collections::BTreeMap;

use super::table::{Origin, TableName};

/// Rows as a test file gives them: per row, column name -> value as text (`None`: NULL, a
/// column the row leaves out or an empty CSV field).
#[derive(Debug, Clone, PartialEq)]
pub struct TestRows {
    pub rows: Vec<BTreeMap<String, Option<String>>>,
    /// Where the rows are written (the TOML key, or the CSV file).
    pub origin: Origin,
}

impl TestRows {
    /// Every column any row names, in first-seen order of the rows' keys (sorted per row).
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for row in &self.rows {
            for key in row.keys() {
                if !out.contains(key) {
                    out.push(key.clone());
                }
            }
        }
        out
    }
}

/// One `[[test]]`: the transform writing `table` run on `given` must return `expect`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTest {
    pub name: String,
    pub table: TableName,
    /// Rows of the transform's input tables; an input not given is empty.
    pub given: Vec<(TableName, TestRows)>,
    /// The rows the SQL must return, in any order; only the columns they name are compared.
    /// With `existing`: the table's rows after the run.
    pub expect: TestRows,
    /// An incremental run (a `replace_partitions` transform): the table's rows before it. The
    /// partitions the given rows of the `incremental_by` inputs fall in are recomputed from
    /// those rows and replace the existing rows of those partitions; the others stay.
    pub existing: Option<TestRows>,
    /// The `[[test]]`'s `table = ...` line.
    pub origin: Origin,
}
