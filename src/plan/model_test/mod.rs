//! `pipeline test`: model tests run in memory. Each test's input rows become in-memory
//! tables of the inputs' schemas (from the spec and the SQL alone), the transform's real SQL
//! runs on them through the SQL gate, and its rows are compared, in any order, with the
//! expected ones on the columns those name. No catalog is read or written.
//!
//! A test with `existing` rows is an incremental run of a `replace_partitions` transform (see
//! `incremental.rs`): its result is the table after the run. What a test does not cover: a
//! transform's `drop` expectations (audits are for `[[expect]]`).

mod incremental;
mod rows;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::datasource::MemTable;
use serde::Serialize;

use self::incremental::Recomputed;
use self::rows::{batch_of, expected_rows, missing_from, text_rows, TextRow};
use super::graph::{job_graph, JobGraph};
use super::validate::spec_schemas;
use crate::engine::{new_session, register_table};
use crate::error::Result;
use crate::spec::{ModelTest, Pipeline, TableName};
use crate::transform::logical_plan;

/// What one test found.
#[derive(Debug, Clone, Serialize)]
pub struct TestOutcome {
    pub name: String,
    pub table: String,
    /// `file:line` of the test.
    pub at: String,
    pub passed: bool,
    /// Why the test could not compare (a bad value, an unknown column, the SQL failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The columns compared.
    pub columns: Vec<String>,
    /// Expected rows the SQL did not return.
    pub missing: Vec<TextRow>,
    /// Rows the SQL returned that were not expected.
    pub unexpected: Vec<TextRow>,
}

/// Runs `tests` of `pipeline`, only those of `tables` when given, in file order.
pub async fn run_model_tests(
    pipeline: &Pipeline,
    tests: &[ModelTest],
    tables: Option<&HashSet<TableName>>,
) -> Result<Vec<TestOutcome>> {
    let graph = job_graph(pipeline)?;
    let schemas = spec_schemas(pipeline, &graph).await?;
    let mut out = Vec::new();
    for test in tests {
        if tables.is_some_and(|t| !t.contains(&test.table)) {
            continue;
        }
        let mut outcome = TestOutcome {
            name: test.name.clone(),
            table: test.table.to_string(),
            at: format!("{}:{}", test.origin.file.display(), test.origin.line),
            passed: false,
            error: None,
            columns: test.expect.columns(),
            missing: Vec::new(),
            unexpected: Vec::new(),
        };
        match run_one(pipeline, &graph, &schemas, test).await {
            Ok(returned) => compare(&mut outcome, test, &returned),
            Err(e) => outcome.error = Some(e),
        }
        out.push(outcome);
    }
    Ok(out)
}

/// The rows `test`'s transform returns on its given rows, with their schema.
async fn run_one(
    pipeline: &Pipeline,
    graph: &JobGraph,
    schemas: &HashMap<TableName, SchemaRef>,
    test: &ModelTest,
) -> std::result::Result<(SchemaRef, Vec<arrow::array::RecordBatch>), String> {
    let i = pipeline
        .transforms
        .iter()
        .position(|t| t.table == test.table)
        .ok_or_else(|| {
            format!(
                "no transform of pipeline `{}` writes {}",
                pipeline.name, test.table
            )
        })?;
    let (job, parsed) = (&pipeline.transforms[i], &graph.transforms[i]);
    if let Some((extra, _)) = test.given.iter().find(|(t, _)| !parsed.inputs.contains(t)) {
        return Err(format!(
            "gives rows of {extra}, which {} does not read",
            job.sql_file.display()
        ));
    }
    let mut given = Vec::new();
    for input in &parsed.inputs {
        let schema = schemas
            .get(input)
            .ok_or_else(|| format!("no schema for {input}"))?;
        // A test leaves out what it does not need (lineage columns included): NULL.
        let rows = test.given.iter().find(|(t, _)| t == input).map(|(_, r)| r);
        let batch = batch_of(&nullable(schema), rows).map_err(|e| format!("given {input}: {e}"))?;
        given.push((input.clone(), batch));
    }
    let recomputed = match &test.existing {
        Some(_) => Some(Recomputed::of(job, test, &given)?),
        None => None,
    };
    let session = new_session();
    for (input, mut batch) in given {
        // An incremental run reads its ranged inputs for the recomputed partitions only.
        if let (Some(r), Some(column)) = (&recomputed, job.range_column(&input)) {
            batch = r.keep(&batch, column, true)?;
        }
        let table =
            MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(|e| e.to_string())?;
        register_table(&session, &input, Arc::new(table)).map_err(|e| e.to_string())?;
    }
    let logical = logical_plan(&session, job, parsed)
        .await
        .map_err(|e| e.to_string())?;
    let frame = session
        .execute_logical_plan(logical)
        .await
        .map_err(|e| e.to_string())?;
    let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
    let mut batches = frame
        .collect()
        .await
        .map_err(|e| format!("{} failed while running: {e}", job.sql_file.display()))?;
    // The existing rows of the partitions not recomputed stay.
    if let (Some(r), Some(existing)) = (&recomputed, &test.existing) {
        let table = schemas
            .get(&job.table)
            .ok_or_else(|| format!("no schema for {}", job.table))?;
        let before =
            batch_of(&nullable(table), Some(existing)).map_err(|e| format!("existing: {e}"))?;
        batches.push(r.keep(&before, &r.column, false)?);
    }
    Ok((schema, batches))
}

/// `schema` with every column nullable.
fn nullable(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<arrow::datatypes::Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    Arc::new(arrow::datatypes::Schema::new(fields))
}

/// Compares the returned rows with the expected ones on the columns those name.
fn compare(
    outcome: &mut TestOutcome,
    test: &ModelTest,
    (schema, batches): &(SchemaRef, Vec<arrow::array::RecordBatch>),
) {
    // In the order the SQL returns them (unknown names last, to be refused below).
    outcome
        .columns
        .sort_by_key(|c| schema.index_of(c).unwrap_or(usize::MAX));
    let columns = &outcome.columns;
    let result = (|| {
        let expected = expected_rows(&test.expect, columns, schema)?;
        let returned = text_rows(batches, columns)?;
        Ok::<_, String>((expected, returned))
    })();
    match result {
        Ok((expected, returned)) => {
            outcome.missing = missing_from(&expected, &returned);
            outcome.unexpected = missing_from(&returned, &expected);
            outcome.passed = outcome.missing.is_empty() && outcome.unexpected.is_empty();
        }
        Err(e) => outcome.error = Some(e),
    }
}
