//! Checks a pipeline without running it: spec, SQL, dependency graph, tables that must exist,
//! and every transform planned against the schemas its inputs will have.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::table::Table;

use super::graph::{job_graph, JobGraph, JobId};
use crate::catalog::PipelineCatalog;
use crate::commit::{schema_of, DesiredColumn};
use crate::engine::{line_naming, session_over};
use crate::error::{Error, Result};
use crate::ingest::{discover_files, no_files_error, output_tables, with_added_columns};
use crate::lineage::{query_lineage, QueryLineage};
use crate::quality::check_expectations;
use crate::spec::{IngestJob, Pipeline, TableName, TransformJob, DROP_QUARANTINE_COLUMNS};
use crate::transform::{
    logical_plan, output_columns, tag_violations, transform_quarantine_columns, ParsedTransform,
};

/// A pipeline that passed every check, with the catalog state it was checked against.
pub struct Validated {
    pub graph: JobGraph,
    pub catalog: Arc<PipelineCatalog>,
    /// Tables read but not produced by the pipeline, pinned at their current snapshot.
    pub external: HashMap<TableName, Table>,
    /// Output schema of every table the pipeline produces.
    pub schemas: HashMap<TableName, SchemaRef>,
    /// Column lineage of every transform, by the table it writes.
    pub lineage: BTreeMap<TableName, QueryLineage>,
    /// The ingest jobs with the columns schema evolution added to their tables.
    pub ingests: Vec<IngestJob>,
}

/// Validates `pipeline` against its catalog. Nothing is written except the catalog's own
/// bookkeeping tables when the catalog file is new.
pub async fn validate(pipeline: &Pipeline) -> Result<Validated> {
    let graph = job_graph(pipeline)?;
    let catalog = PipelineCatalog::connect(&pipeline.catalog).await?;
    let catalog = Arc::new(catalog.in_env(pipeline.env.clone())?);
    let external = load_external(&catalog, pipeline, &graph).await?;
    let mut schemas: HashMap<TableName, SchemaRef> = HashMap::new();
    let mut lineage = BTreeMap::new();
    for (name, table) in &external {
        schemas.insert(
            name.clone(),
            Arc::new(schema_to_arrow_schema(table.metadata().current_schema())?),
        );
    }
    let ingests = ingest_schemas(&catalog, pipeline, &mut schemas).await?;
    for job_id in &graph.order {
        let JobId::Transform(i) = *job_id else {
            continue;
        };
        let job = &pipeline.transforms[i];
        let job_lineage = validate_transform(job, &graph.transforms[i], &mut schemas).await?;
        lineage.insert(job.table.clone(), job_lineage);
    }
    check_expectations(&pipeline.expectations, &schemas).await?;
    Ok(Validated {
        graph,
        catalog,
        external,
        schemas,
        lineage,
        ingests,
    })
}

/// The schema of every table `pipeline` writes from the spec and the SQL alone: ingests as
/// declared (without columns schema evolution added since), no catalog read. What model tests
/// build their input tables with; a transform reading a table no job writes is an error
/// naming it (its columns are the catalog's to tell).
pub async fn spec_schemas(
    pipeline: &Pipeline,
    graph: &JobGraph,
) -> Result<HashMap<TableName, SchemaRef>> {
    let mut schemas: HashMap<TableName, SchemaRef> = HashMap::new();
    for job in &pipeline.ingests {
        for (table, columns) in output_tables(job) {
            let schema = schema_to_arrow_schema(&schema_of(&columns)?)?;
            schemas.insert(table, Arc::new(schema));
        }
    }
    let external = graph.external_inputs();
    for job_id in &graph.order {
        let JobId::Transform(i) = *job_id else {
            continue;
        };
        let job = &pipeline.transforms[i];
        if let Some((_, name)) = external.iter().find(|(j, _)| *j == i) {
            return Err(Error::Sql {
                file: job.sql_file.clone(),
                line: line_naming(&job.sql, &name.to_string()),
                message: format!(
                    "reads `{name}`, which no job of pipeline `{}` writes: a model test cannot know its columns",
                    pipeline.name
                ),
            });
        }
        validate_transform(job, &graph.transforms[i], &mut schemas).await?;
    }
    Ok(schemas)
}

/// The tables the pipeline reads but no job of it produces, loaded at their current
/// snapshot; an error at the SQL reading the first that does not exist.
async fn load_external(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    graph: &JobGraph,
) -> Result<HashMap<TableName, Table>> {
    let mut external = HashMap::new();
    for (i, name) in graph.external_inputs() {
        match catalog.load(&name).await? {
            Some(t) => {
                external.insert(name, t);
            }
            None => {
                return Err(Error::Sql {
                    file: pipeline.transforms[i].sql_file.clone(),
                    line: line_naming(&pipeline.transforms[i].sql, &name.to_string()),
                    message: format!(
                        "reads table `{name}`, which no job of pipeline `{}` produces and which does not exist in the catalog",
                        pipeline.name
                    ),
                })
            }
        }
    }
    Ok(external)
}

/// Adds the schema of every table an ingest writes to `schemas`; returns the ingests with
/// the columns schema evolution added to their tables.
async fn ingest_schemas(
    catalog: &PipelineCatalog,
    pipeline: &Pipeline,
    schemas: &mut HashMap<TableName, SchemaRef>,
) -> Result<Vec<IngestJob>> {
    let names: Vec<&TableName> = pipeline.ingests.iter().map(|j| &j.table).collect();
    let loaded = catalog.load_many(&names).await?;
    let mut ingests = Vec::new();
    for (job, live) in pipeline.ingests.iter().zip(loaded) {
        // Columns added by schema evolution are part of the table.
        // A pattern matching nothing is a mistake on a table's first load (the run says so
        // too); later it only means that nothing new arrived.
        if live.is_none() {
            let (_, unmatched) = discover_files(job, &pipeline.project_dir)?;
            if let Some(pattern) = unmatched.first() {
                return Err(no_files_error(job, &pipeline.project_dir, pattern));
            }
        }
        let job = with_added_columns(job, live.as_ref().map(|t| t.metadata()));
        for (table, columns) in output_tables(&job) {
            let schema = schema_to_arrow_schema(&schema_of(&columns)?)?;
            schemas.insert(table, Arc::new(schema));
        }
        ingests.push(job);
    }
    Ok(ingests)
}

/// Checks one transform against the schemas of its inputs (`incremental_by`, its SQL,
/// `partition_by`, its `drop` expectations) and adds the schemas of the tables it writes to
/// `schemas`; returns its column lineage.
async fn validate_transform(
    job: &TransformJob,
    parsed: &ParsedTransform,
    schemas: &mut HashMap<TableName, SchemaRef>,
) -> Result<QueryLineage> {
    check_incremental_by(job, parsed, schemas)?;
    if let Some(missing) = parsed.inputs.iter().find(|i| !schemas.contains_key(*i)) {
        return Err(Error::Internal(format!("no schema for {missing}")));
    }
    let session = session_over(schemas, &parsed.inputs)?;
    let logical = logical_plan(&session, job, parsed).await?;
    let columns = output_columns(job, &logical)?;
    job.docs
        .check_columns(&job.table, columns.iter().map(|c| c.name.as_str()))?;
    let lineage = query_lineage(&logical);
    let schema = schema_to_arrow_schema(&schema_of(&columns)?)?;
    check_partition_by(job, &columns, &schema)?;
    if !job.drops.is_empty() {
        check_drops(job, &session, &logical, &columns).await?;
        let q = schema_of(&transform_quarantine_columns(&columns))?;
        schemas.insert(
            job.table.quarantine(),
            Arc::new(schema_to_arrow_schema(&q)?),
        );
    }
    schemas.insert(job.table.clone(), Arc::new(schema));
    Ok(lineage)
}

/// Each `incremental_by` input is read by the SELECT and has the named column, a date or
/// timestamp.
fn check_incremental_by(
    job: &TransformJob,
    parsed: &ParsedTransform,
    schemas: &HashMap<TableName, SchemaRef>,
) -> Result<()> {
    for r in &job.incremental_by {
        let spec_error = |message: String, hint: Option<String>| Error::Spec {
            file: job.origin.file.clone(),
            line: r.line,
            col: 1,
            message,
            hint,
        };
        if !parsed.inputs.contains(&r.table) {
            return Err(spec_error(
                format!(
                    "{}: incremental_by names `{}`, which {} does not read",
                    job.table,
                    r.table,
                    job.sql_file.display()
                ),
                Some(format!(
                    "the SELECT reads: {}",
                    parsed
                        .inputs
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            ));
        }
        let schema = schemas.get(&r.table);
        let field = schema.and_then(|s| s.field_with_name(&r.column).ok());
        match field.map(|f| f.data_type()) {
            Some(
                arrow::datatypes::DataType::Date32 | arrow::datatypes::DataType::Timestamp(..),
            ) => {}
            Some(other) => {
                let message = format!(
                    "{}: incremental_by column `{}.{}` is {other}; it must be a date or timestamp",
                    job.table, r.table, r.column
                );
                return Err(spec_error(message, None));
            }
            None => {
                return Err(spec_error(
                    format!(
                        "{}: incremental_by names column `{}` of {}, which has no such column",
                        job.table, r.column, r.table
                    ),
                    schema.map(|s| {
                        format!(
                            "{} has: {}",
                            r.table,
                            s.fields()
                                .iter()
                                .map(|f| f.name().as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }),
                ))
            }
        }
    }
    Ok(())
}

/// Each `partition_by` field names a column the SELECT returns, of a type its transform
/// takes.
fn check_partition_by(
    job: &TransformJob,
    columns: &[DesiredColumn],
    schema: &Schema,
) -> Result<()> {
    for p in &job.partition_by {
        if let Some(column) = columns.iter().find(|c| c.name == p.source) {
            p.check_type(&column.ty).map_err(|message| Error::Spec {
                file: job.origin.file.clone(),
                line: job.origin.line,
                col: 1,
                message: format!("{}: {message} (as {} returns it)", job.table, job.sql_file.display()),
                hint: Some("partition by a date or timestamp column with year/month/day/hour, or by the column itself".into()),
            })?;
        }
        if schema.field_with_name(&p.source).is_err() {
            return Err(Error::Spec {
                file: job.origin.file.clone(),
                line: job.origin.line,
                col: 1,
                message: format!(
                    "{}: partition_by `{}` names column `{}`, which the SELECT in {} does not return",
                    job.table,
                    p.text,
                    p.source,
                    job.sql_file.display()
                ),
                hint: Some(format!(
                    "the SELECT returns: {}",
                    columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
                )),
            });
        }
    }
    Ok(())
}

/// The SELECT returns no column the quarantine table of its `drop` expectations adds, and
/// those expectations apply to its columns.
async fn check_drops(
    job: &TransformJob,
    session: &SessionContext,
    logical: &LogicalPlan,
    columns: &[DesiredColumn],
) -> Result<()> {
    if let Some(clash) = columns
        .iter()
        .find(|c| DROP_QUARANTINE_COLUMNS.contains(&c.name.as_str()))
    {
        return Err(Error::Sql {
            file: job.sql_file.clone(),
            line: None,
            message: format!(
                "the SELECT returns a column named `{}`, which the quarantine table of {}'s drop expectations adds; alias it",
                clash.name, job.table
            ),
        });
    }
    // The drop expectations must apply to the output's columns.
    tag_violations(session, logical.clone(), &job.drops).await?;
    Ok(())
}
