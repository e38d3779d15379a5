//! The table a job writes into: loaded from the catalog, or new metadata for a table that the
//! publish will create. A changed output schema or partition spec evolves the table (field ids
//! are kept for unchanged columns) instead of recreating it, so time travel keeps working.

use std::collections::{BTreeMap, HashMap};

use iceberg::spec::{
    FormatVersion, NestedField, Schema, TableMetadata, TableMetadataBuilder, Type,
    UnboundPartitionSpec,
};
use iceberg::TableCreation;

use super::widen::{type_change, TypeChange, WIDENINGS};
use crate::catalog::PipelineCatalog;
use crate::error::{Error, Result};
use crate::spec::{Origin, PartitionField, TableDocs, TableName, COMMENT_PROPERTY};

/// One column a job produces.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredColumn {
    pub name: String,
    pub ty: Type,
    pub required: bool,
}

/// How a job may change the columns of a table that exists.
#[derive(Debug, Clone)]
pub enum Evolution {
    /// Appends (bronze and quarantine tables): a column's type may only widen (see
    /// [`type_change`]); any other type change fails, since the rows already loaded must stay
    /// readable. `declared_in` names the spec line for the message.
    Append { declared_in: Option<Origin> },
    /// Rewrites (transforms): a column of `renamed` (new name -> old name, as the caller's
    /// column lineage says) keeps the old column's field id under its new name; an incompatible
    /// type change replaces the column (the job rewrites the table).
    Rewrite { renamed: BTreeMap<String, String> },
}

/// The table state a job writes on top of.
pub struct TableTarget {
    pub table: TableName,
    pub base_location: Option<String>,
    pub metadata: TableMetadata,
    /// The table is new, or its schema or partition spec had to change for this job: only a
    /// full overwrite can write it.
    pub reshaped: bool,
}

impl TableTarget {
    /// The table as it is at `location`, unchanged, as the base of its next version: the
    /// metadata log gets `location`, as every new version's log must.
    pub fn unchanged(
        table: &TableName,
        metadata: &TableMetadata,
        location: &str,
    ) -> Result<TableTarget> {
        Ok(TableTarget {
            table: table.clone(),
            base_location: Some(location.to_string()),
            metadata: metadata
                .clone()
                .into_builder(Some(location.to_string()))
                .build()?
                .metadata,
            reshaped: false,
        })
    }
}

/// Loads `table` (or prepares its creation) with exactly `columns` and `partition_by`,
/// evolving an existing table's schema by field id as `evolution` allows. The spec's `docs`
/// are the truth of the table's words: each field's `doc` and the `comment` property are set
/// to them, and cleared where the spec gives none. A change of words alone adds a schema with
/// the same fields (same ids and types): the job writes as it would have.
pub async fn prepare_target(
    catalog: &PipelineCatalog,
    table: &TableName,
    columns: &[DesiredColumn],
    partition_by: &[PartitionField],
    docs: &TableDocs,
    evolution: &Evolution,
) -> Result<TableTarget> {
    let existing = catalog.load(table).await?;
    prepare_target_from(
        catalog,
        table,
        existing,
        columns,
        partition_by,
        docs,
        evolution,
    )
    .await
}

/// [`prepare_target`] on `existing`, the table as the caller already loaded it (`None`: it
/// does not exist).
pub async fn prepare_target_from(
    catalog: &PipelineCatalog,
    table: &TableName,
    existing: Option<iceberg::table::Table>,
    columns: &[DesiredColumn],
    partition_by: &[PartitionField],
    docs: &TableDocs,
    evolution: &Evolution,
) -> Result<TableTarget> {
    let existing = match existing {
        Some(existing) => existing,
        None => match create_table(catalog, table, columns, partition_by, docs).await? {
            Created::AtPublish(target) => return Ok(*target),
            Created::Empty(existing) => existing,
        },
    };
    let base_location = existing.metadata_location_result()?.to_string();
    let current = existing.metadata().clone();
    let current_schema = current.current_schema().clone();
    let appended: Vec<DesiredColumn>;
    let columns = match evolution {
        Evolution::Append { .. } => {
            appended = as_appended(columns, &current_schema);
            appended.as_slice()
        }
        Evolution::Rewrite { .. } => columns,
    };
    let same_schema = same_columns(&current_schema, columns);
    let mut builder = current.clone().into_builder(Some(base_location.clone()));
    let schema = if same_schema && same_docs(&current_schema, docs) {
        current_schema.as_ref().clone()
    } else {
        let ids = kept_field_ids(table, &current_schema, columns, evolution)?;
        let schema = schema_with_ids(columns, &ids, current.last_column_id(), docs)?;
        builder = builder.add_current_schema(schema.clone())?;
        schema
    };
    builder = with_comment(builder, &current, docs)?;
    let spec = partition_spec(table, &schema, partition_by)?;
    let current_spec = current
        .default_partition_spec()
        .fields()
        .iter()
        .map(|f| (f.source_id, f.name.clone(), f.transform))
        .collect::<Vec<_>>();
    let wanted_spec = spec
        .fields()
        .iter()
        .map(|f| (f.source_id, f.name.clone(), f.transform))
        .collect::<Vec<_>>();
    if current_spec != wanted_spec {
        builder = builder.add_default_partition_spec(spec)?;
    }
    if !same_schema || current_spec != wanted_spec {
        tracing::info!(table = %table, "schema or partition spec changed; evolving the table");
    }
    Ok(TableTarget {
        table: table.clone(),
        base_location: Some(base_location),
        metadata: builder.build()?.metadata,
        reshaped: !same_schema
            || current_spec != wanted_spec
            || current.current_snapshot_id().is_none(),
    })
}

/// `target`, a table the run's publish creates (no base location), with `columns` (its own
/// and more, in the order the table lists them): a column it had keeps its field id, a new one
/// gets the next id, so data files already written for `target` stay exact (a file without a
/// column reads NULL in it). The partition spec is kept (it names columns `target` had).
pub fn widen_unpublished(
    target: &TableTarget,
    columns: &[DesiredColumn],
    docs: &TableDocs,
) -> Result<TableTarget> {
    if target.base_location.is_some() {
        return Err(Error::Internal(format!(
            "{} exists: widen it with prepare_target",
            target.table
        )));
    }
    let current = &target.metadata;
    let evolution = Evolution::Append { declared_in: None };
    let ids = kept_field_ids(&target.table, current.current_schema(), columns, &evolution)?;
    let schema = schema_with_ids(columns, &ids, current.last_column_id(), docs)?;
    let metadata = current
        .clone()
        .into_builder(None)
        .add_current_schema(schema)?
        .build()?
        .metadata;
    Ok(TableTarget {
        table: target.table.clone(),
        base_location: None,
        metadata,
        reshaped: true,
    })
}

/// A table [`prepare_target_from`] found missing, as it prepared its creation.
enum Created {
    /// The embedded catalog's: created when the run publishes; the target is its first
    /// metadata.
    AtPublish(Box<TableTarget>),
    /// A remote catalog's: created now, empty.
    Empty(iceberg::table::Table),
}

/// Prepares the creation of `table` with `columns` (fresh field ids), `partition_by` and
/// `docs` (format version 2).
async fn create_table(
    catalog: &PipelineCatalog,
    table: &TableName,
    columns: &[DesiredColumn],
    partition_by: &[PartitionField],
    docs: &TableDocs,
) -> Result<Created> {
    // Only a table to create needs its namespace made sure of (one round trip less per job
    // on a remote catalog when the table exists).
    catalog.ensure_namespace(&table.namespace).await?;
    let schema = schema_with_ids(columns, &[], 0, docs)?;
    let properties: HashMap<String, String> = docs
        .description
        .iter()
        .map(|d| (COMMENT_PROPERTY.to_string(), d.clone()))
        .collect();
    let spec = partition_spec(table, &schema, partition_by)?;
    let creation = TableCreation::builder()
        .name(table.name.clone())
        .location_opt(catalog.local_table_location(table))
        .schema(schema)
        .partition_spec(spec)
        .properties(properties)
        .format_version(FormatVersion::V2)
        .build();
    if catalog.local_warehouse().is_some() {
        // The embedded catalog creates the table when the run publishes.
        let metadata = TableMetadataBuilder::from_table_creation(creation)?
            .build()?
            .metadata;
        return Ok(Created::AtPublish(Box::new(TableTarget {
            table: table.clone(),
            base_location: None,
            metadata,
            reshaped: true,
        })));
    }
    // A remote catalog chooses the location: it creates the table now, empty, and
    // the run writes on top of that version.
    Ok(Created::Empty(
        catalog.create_empty_table(table, creation).await?,
    ))
}

/// `columns` as an append writes them into a table of `current` schema: a column the table
/// did not have, or had as optional, is optional.
fn as_appended(columns: &[DesiredColumn], current: &Schema) -> Vec<DesiredColumn> {
    // Rows already appended must stay readable: a column the table did not have, or had as
    // optional, stays optional (`not null` is still enforced on the rows loaded from now on).
    columns
        .iter()
        .map(|c| DesiredColumn {
            required: c.required && current.field_by_name(&c.name).is_some_and(|f| f.required),
            ..c.clone()
        })
        .collect()
}

/// Whether `schema` has exactly `columns`, in order (name, type and nullability).
fn same_columns(schema: &Schema, columns: &[DesiredColumn]) -> bool {
    schema.as_struct().fields().len() == columns.len()
        && schema
            .as_struct()
            .fields()
            .iter()
            .zip(columns)
            .all(|(f, c)| f.name == c.name && *f.field_type == c.ty && f.required == c.required)
}

/// The field id each of `columns` keeps from the `current` schema of `table`: the column of
/// its name (or, on a rewrite, of its old name per `evolution`) when its type is the same or
/// widens; `None` for a new column, or on a rewrite, an incompatible type change. An
/// incompatible change of an appended column is an error.
fn kept_field_ids(
    table: &TableName,
    current: &Schema,
    columns: &[DesiredColumn],
    evolution: &Evolution,
) -> Result<Vec<Option<i32>>> {
    let no_renames = BTreeMap::new();
    let renamed = match evolution {
        Evolution::Rewrite { renamed } => renamed,
        Evolution::Append { .. } => &no_renames,
    };
    let mut ids = Vec::with_capacity(columns.len());
    for c in columns {
        let old = current.field_by_name(&c.name).or_else(|| {
            renamed
                .get(&c.name)
                .and_then(|old| current.field_by_name(old))
        });
        let id = match old {
            None => None,
            Some(f) => match type_change(&f.field_type, &c.ty) {
                TypeChange::Same | TypeChange::Widen => {
                    if f.name != c.name {
                        tracing::info!(table = %table, from = %f.name, to = %c.name, "column renamed (field id {} kept)", f.id);
                    }
                    Some(f.id)
                }
                TypeChange::Incompatible => match evolution {
                    Evolution::Rewrite { .. } => None,
                    Evolution::Append { declared_in } => {
                        let at = declared_in
                            .as_ref()
                            .map(|o| format!(" ({}:{})", o.file.display(), o.line))
                            .unwrap_or_default();
                        return Err(Error::table_msg(
                            table,
                            format!(
                                "column `{}` is {} in the table but {} in the spec{at}: not a safe widening ({WIDENINGS}), so the rows already loaded could not be read as {}. Keep the column's type, or load the values into a new column or a new table",
                                c.name, f.field_type, c.ty, c.ty
                            ),
                        ));
                    }
                },
            },
        };
        ids.push(id);
    }
    Ok(ids)
}

/// A schema with fresh field ids 1..n for `columns`.
pub fn schema_of(columns: &[DesiredColumn]) -> Result<Schema> {
    schema_with_ids(columns, &[], 0, &TableDocs::default())
}

/// Whether the table of `metadata` says what `docs` says: the `comment` property and each
/// field's doc of its current schema.
pub fn has_words(metadata: &TableMetadata, docs: &TableDocs) -> bool {
    metadata.properties().get(COMMENT_PROPERTY) == docs.description.as_ref()
        && same_docs(metadata.current_schema(), docs)
}

/// Whether each field of `schema` has the doc `docs` gives its column (none where none).
fn same_docs(schema: &Schema, docs: &TableDocs) -> bool {
    schema
        .as_struct()
        .fields()
        .iter()
        .all(|f| f.doc.as_deref() == docs.of_column(&f.name))
}

/// `builder` with the table's `comment` property set to the spec's description, or removed
/// when the spec gives none.
fn with_comment(
    builder: TableMetadataBuilder,
    current: &TableMetadata,
    docs: &TableDocs,
) -> Result<TableMetadataBuilder> {
    let now = current.properties().get(COMMENT_PROPERTY);
    Ok(match &docs.description {
        Some(d) if now != Some(d) => {
            builder.set_properties(HashMap::from([(COMMENT_PROPERTY.to_string(), d.clone())]))?
        }
        None if now.is_some() => builder.remove_properties(&[COMMENT_PROPERTY.to_string()])?,
        _ => builder,
    })
}

/// A schema for `columns`, column `i` keeping id `ids[i]` where given, the others numbered
/// after `last_id`; each field's doc is its column's description in `docs`.
fn schema_with_ids(
    columns: &[DesiredColumn],
    ids: &[Option<i32>],
    last_id: i32,
    docs: &TableDocs,
) -> Result<Schema> {
    let mut next = last_id;
    let fields = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let id = ids.get(i).copied().flatten().unwrap_or_else(|| {
                next += 1;
                next
            });
            let field = if c.required {
                NestedField::required(id, &c.name, c.ty.clone())
            } else {
                NestedField::optional(id, &c.name, c.ty.clone())
            };
            match docs.of_column(&c.name) {
                Some(doc) => field.with_doc(doc).into(),
                None => field.into(),
            }
        })
        .collect::<Vec<_>>();
    Ok(Schema::builder().with_fields(fields).build()?)
}

fn partition_spec(
    table: &TableName,
    schema: &Schema,
    partition_by: &[PartitionField],
) -> Result<UnboundPartitionSpec> {
    let mut builder = UnboundPartitionSpec::builder();
    for p in partition_by {
        let field = schema.field_by_name(&p.source).ok_or_else(|| {
            Error::table_msg(
                table,
                format!(
                    "partition_by `{}`: the table has no column `{}`",
                    p.text, p.source
                ),
            )
        })?;
        builder = builder
            .add_partition_field(field.id, p.field_name(), p.transform)
            .map_err(|e| Error::table(table, format!("partition_by `{}`", p.text), e))?;
    }
    Ok(builder.build())
}
