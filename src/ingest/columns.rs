//! The columns of the tables an ingest job writes, with their Iceberg types: its bronze table
//! (the declared columns, then the loader's lineage columns) and its quarantine table. The
//! names are the spec's ([`LINEAGE_COLUMNS`], [`QUARANTINE_COLUMNS`]); the types are here.

use iceberg::spec::{PrimitiveType, Type};

use crate::commit::DesiredColumn;
use crate::spec::{BadRecordPolicy, IngestJob, TableName, LINEAGE_COLUMNS, QUARANTINE_COLUMNS};

/// The columns of a bronze table: the declared ones, then the lineage columns.
pub fn bronze_columns(job: &IngestJob) -> Vec<DesiredColumn> {
    let mut columns: Vec<DesiredColumn> = job
        .columns
        .iter()
        .map(|c| DesiredColumn {
            name: c.name.clone(),
            ty: c.ty.iceberg_type(),
            required: c.required,
        })
        .collect();
    columns.extend(lineage_columns());
    columns
}

/// The tables an ingest job writes, with their columns: its bronze table and, under the
/// `quarantine` policy, its quarantine table.
pub fn output_tables(job: &IngestJob) -> Vec<(TableName, Vec<DesiredColumn>)> {
    let mut out = vec![(job.table.clone(), bronze_columns(job))];
    if job.on_bad_record == BadRecordPolicy::Quarantine {
        out.push((job.table.quarantine(), quarantine_columns()));
    }
    out
}

fn lineage_columns() -> Vec<DesiredColumn> {
    let types = [
        PrimitiveType::String,
        PrimitiveType::Long,
        PrimitiveType::Timestamptz,
        PrimitiveType::String,
    ];
    LINEAGE_COLUMNS
        .iter()
        .zip(types)
        .map(|(name, ty)| DesiredColumn {
            name: name.to_string(),
            ty: Type::Primitive(ty),
            required: true,
        })
        .collect()
}

/// The columns of an ingest job's quarantine table (names: [`QUARANTINE_COLUMNS`]); only
/// `column` may be NULL.
pub fn quarantine_columns() -> Vec<DesiredColumn> {
    let types = [
        PrimitiveType::String,
        PrimitiveType::Long,
        PrimitiveType::String,
        PrimitiveType::String,
        PrimitiveType::String,
        PrimitiveType::Timestamptz,
        PrimitiveType::String,
    ];
    QUARANTINE_COLUMNS
        .iter()
        .zip(types)
        .map(|(name, ty)| DesiredColumn {
            name: name.to_string(),
            ty: Type::Primitive(ty),
            required: *name != "column",
        })
        .collect()
}
