//! Checks a pipeline without running it: spec, SQL, dependency graph, tables that must exist,
//! and every transform planned against the schemas its inputs will have.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::datasource::empty::EmptyTable;
use iceberg::arrow::schema_to_arrow_schema;
use iceberg::table::Table;

use crate::catalog::PipelineCatalog;
use crate::commit::schema_of;
use crate::error::{Error, Result};
use crate::ingest::{bronze_columns, quarantine_columns};
use crate::plan::{plan_pipeline, JobId, Plan};
use crate::spec::{BadRecordPolicy, Pipeline, TableName};
use crate::transform::{new_session, output_columns, plan_transform, register_table};

/// A pipeline that passed every check, with the catalog state it was checked against.
pub struct Validated {
    pub plan: Plan,
    pub catalog: Arc<PipelineCatalog>,
    /// Tables read but not produced by the pipeline, pinned at their current snapshot.
    pub external: HashMap<TableName, Table>,
    /// Output schema of every table the pipeline produces.
    pub schemas: HashMap<TableName, SchemaRef>,
}

/// Validates `pipeline` against its catalog. Nothing is written except the catalog's own
/// bookkeeping tables when the catalog file is new.
pub async fn validate(pipeline: &Pipeline) -> Result<Validated> {
    let plan = plan_pipeline(pipeline)?;
    let catalog = Arc::new(PipelineCatalog::connect(&pipeline.catalog).await?);
    let mut external = HashMap::new();
    for (i, name) in plan.external_inputs() {
        match catalog.load(&name).await? {
            Some(t) => {
                external.insert(name, t);
            }
            None => {
                return Err(Error::Sql {
                    file: pipeline.transforms[i].sql_file.clone(),
                    line: None,
                    message: format!(
                        "reads table `{name}`, which no job of pipeline `{}` produces and which does not exist in the catalog",
                        pipeline.name
                    ),
                })
            }
        }
    }
    let mut schemas: HashMap<TableName, SchemaRef> = HashMap::new();
    for (name, table) in &external {
        schemas.insert(
            name.clone(),
            Arc::new(schema_to_arrow_schema(table.metadata().current_schema())?),
        );
    }
    for job in &pipeline.ingests {
        let schema = schema_to_arrow_schema(&schema_of(&bronze_columns(job))?)?;
        schemas.insert(job.table.clone(), Arc::new(schema));
        if job.on_bad_record == BadRecordPolicy::Quarantine {
            let q = schema_to_arrow_schema(&schema_of(&quarantine_columns())?)?;
            schemas.insert(job.table.quarantine(), Arc::new(q));
        }
    }
    for job_id in &plan.order {
        let JobId::Transform(i) = *job_id else {
            continue;
        };
        let job = &pipeline.transforms[i];
        let parsed = &plan.transforms[i];
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
                Some(arrow::datatypes::DataType::Date32 | arrow::datatypes::DataType::Timestamp(..)) => {}
                Some(other) => {
                    return Err(spec_error(
                        format!(
                            "{}: incremental_by column `{}.{}` is {other}; it must be a date or timestamp",
                            job.table, r.table, r.column
                        ),
                        None,
                    ))
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
                                s.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
                            )
                        }),
                    ))
                }
            }
        }
        let session = new_session();
        for input in &parsed.inputs {
            let schema = schemas
                .get(input)
                .cloned()
                .ok_or_else(|| Error::Usage(format!("internal: no schema for {input}")))?;
            register_table(&session, input, Arc::new(EmptyTable::new(schema)))?;
        }
        let logical = plan_transform(&session, job, parsed).await?;
        let columns = output_columns(job, &logical)?;
        let schema = schema_to_arrow_schema(&schema_of(&columns)?)?;
        for p in &job.partition_by {
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
        schemas.insert(job.table.clone(), Arc::new(schema));
    }
    Ok(Validated {
        plan,
        catalog,
        external,
        schemas,
    })
}
