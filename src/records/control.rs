//! The control table of a remote catalog, `pipeline_meta.runs`: one row per published run
//! holding its run record (JSON), and, while a table-by-table publish is under way, the
//! publish's intent in a table property (written by `commit::publish`). This file creates the
//! table on first use and reads the records.

use std::collections::HashMap;
use std::sync::Mutex;

use arrow::array::StringArray;
use futures::TryStreamExt;
use iceberg::spec::{FormatVersion, NestedField, PrimitiveType, Schema, Type};
use iceberg::{NamespaceIdent, TableCreation};

use super::record::RunRecord;
use crate::catalog::{Current, RemoteCatalog};
use crate::error::{Error, Result};
use crate::spec::TableName;

/// Namespace of the control table of remote catalogs.
pub const CONTROL_NAMESPACE: &str = "pipeline_meta";
/// Name of the control table: run records (rows) and the pending publish (a table property).
pub const CONTROL_TABLE: &str = "runs";

/// The control table's name, `pipeline_meta.runs`.
pub fn control_name() -> TableName {
    TableName {
        namespace: CONTROL_NAMESPACE.into(),
        name: CONTROL_TABLE.into(),
    }
}

fn control_schema() -> Result<Schema> {
    let fields = [
        "run_id",
        "pipeline",
        "kind",
        "started_at",
        "finished_at",
        "record",
    ]
    .iter()
    .enumerate()
    .map(|(i, name)| {
        NestedField::required(i as i32 + 1, *name, Type::Primitive(PrimitiveType::String)).into()
    })
    .collect::<Vec<_>>();
    Ok(Schema::builder().with_fields(fields).build()?)
}

/// The control table's current version, if the catalog has one (nothing is created: for
/// commands that only read).
pub async fn existing_control_table(remote: &RemoteCatalog) -> Result<Option<Current>> {
    remote.current(&control_name()).await
}

/// The control table's current version, created on first use.
pub async fn control_table(remote: &RemoteCatalog) -> Result<Current> {
    let name = control_name();
    if let Some(current) = remote.current(&name).await? {
        return Ok(current);
    }
    let ns = NamespaceIdent::new(CONTROL_NAMESPACE.to_string());
    if !remote.catalog.namespace_exists(&ns).await? {
        if let Err(e) = remote.catalog.create_namespace(&ns, HashMap::new()).await {
            if !remote.catalog.namespace_exists(&ns).await? {
                return Err(e.into());
            }
        }
    }
    let creation = TableCreation::builder()
        .name(CONTROL_TABLE.to_string())
        .schema(control_schema()?)
        .format_version(FormatVersion::V2)
        .properties(HashMap::from([(
            "comment".to_string(),
            "pipeline run records (one row per published run) and the pending publish".to_string(),
        )]))
        .build();
    let created = remote.catalog.create_table(&ns, creation).await;
    match (remote.current(&name).await?, created) {
        (Some(current), _) => Ok(current),
        (None, Err(e)) => Err(Error::table(
            &name,
            "cannot create the control table (run records and pending publishes) of this catalog",
            e,
        )),
        (None, Ok(_)) => Err(Error::table_msg(&name, "created, but cannot be loaded")),
    }
}

/// The records last read, by the control table's metadata location they were read at: a
/// metadata file never changes, so neither do the records it holds. A command reads them
/// several times (maintenance after a run: rollback points, then its own publish) and each
/// full read costs the table's manifests and data files.
static LAST_READ: Mutex<Option<(String, Vec<RunRecord>)>> = Mutex::new(None);

/// Every run record in the control table, oldest first. One catalog load; the table's files
/// are read only when it moved since the last read.
pub async fn run_records(remote: &RemoteCatalog) -> Result<Vec<RunRecord>> {
    let name = control_name();
    let Some(table) = remote.table(&name).await? else {
        return Ok(Vec::new());
    };
    let location = table.metadata_location().map(str::to_string);
    let last = |l: &str| {
        let read = LAST_READ.lock().unwrap_or_else(|e| e.into_inner());
        read.as_ref()
            .filter(|(at, _)| at == l)
            .map(|(_, records)| records.clone())
    };
    if let Some(records) = location.as_deref().and_then(last) {
        return Ok(records);
    }
    let records = records_of(&table).await?;
    if let Some(at) = location {
        *LAST_READ.lock().unwrap_or_else(|e| e.into_inner()) = Some((at, records.clone()));
    }
    Ok(records)
}

/// The run of the same pipeline that already served `record`'s scheduled tick in the control
/// table's version `control` (the version a publish moves from, so that the check and the
/// publish are one compare-and-set); `None` for a record that serves no tick.
pub async fn tick_served_in(
    remote: &RemoteCatalog,
    control: &Current,
    record: &RunRecord,
) -> Result<Option<String>> {
    let Some(tick) = &record.tick else {
        return Ok(None);
    };
    if control.metadata.current_snapshot().is_none() {
        return Ok(None);
    }
    // Read as the publisher reads it to rewrite its records (the catalog's file access).
    let table = iceberg::table::StaticTable::from_metadata(
        control.metadata.clone(),
        control_name().ident(),
        remote.file_io.clone(),
    )
    .await?
    .into_table();
    Ok(records_of(&table)
        .await?
        .into_iter()
        .find(|r| r.pipeline == record.pipeline && r.tick.as_ref() == Some(tick))
        .map(|r| r.run_id))
}

/// The run records in `table`'s current snapshot, oldest first.
async fn records_of(table: &iceberg::table::Table) -> Result<Vec<RunRecord>> {
    let name = control_name();
    if table.metadata().current_snapshot().is_none() {
        return Ok(Vec::new());
    }
    let mut stream = table.scan().select(["record"]).build()?.to_arrow().await?;
    let mut out = Vec::new();
    while let Some(batch) = stream.try_next().await? {
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| Error::table_msg(&name, "column `record` is not a string"))?;
        for text in column.iter().flatten() {
            out.push(
                serde_json::from_str::<RunRecord>(text)
                    .map_err(|e| Error::table_msg(&name, format!("unreadable run record: {e}")))?,
            );
        }
    }
    out.sort_by(|a, b| (&a.finished_at, &a.run_id).cmp(&(&b.finished_at, &b.run_id)));
    Ok(out)
}
