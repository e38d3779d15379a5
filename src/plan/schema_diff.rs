//! The column changes from a live table's schema to the columns the next run would give it:
//! renames (those whose old type reads as the new one), drops, widenings, retypes and
//! additions, each with whether it breaks readers. Part of `pipeline plan` ([`super::impact`]).

use std::collections::BTreeMap;

use iceberg::spec::TableMetadata;

use crate::commit::{type_change, DesiredColumn, TypeChange};
use serde::Serialize;

/// One change to a table's schema, as `pipeline plan` reports it.
#[derive(Debug, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum ChangeKind {
    Added {
        column: String,
        #[serde(rename = "type")]
        ty: String,
    },
    Dropped {
        column: String,
    },
    Renamed {
        from: String,
        to: String,
    },
    Widened {
        column: String,
        from: String,
        to: String,
    },
    Retyped {
        column: String,
        from: String,
        to: String,
    },
}

/// Column changes from the live schema to `columns` (each with whether it breaks readers).
pub(super) fn diff(
    live: &TableMetadata,
    columns: &[DesiredColumn],
    renamed: &BTreeMap<String, String>,
) -> Vec<(ChangeKind, bool)> {
    let schema = live.current_schema();
    let old: Vec<(String, iceberg::spec::Type)> = schema
        .as_struct()
        .fields()
        .iter()
        .map(|f| (f.name.clone(), f.field_type.as_ref().clone()))
        .collect();
    let renamed = &readable_renames(schema, columns, renamed);
    let mut out: Vec<(ChangeKind, bool)> = old
        .iter()
        .filter_map(|(name, ty)| change_of_live_column(name, ty, columns, renamed))
        .collect();
    for c in columns {
        if !old.iter().any(|(n, _)| *n == c.name) && !renamed.contains_key(&c.name) {
            out.push((
                ChangeKind::Added {
                    column: c.name.clone(),
                    ty: c.ty.to_string(),
                },
                false,
            ));
        }
    }
    out
}

/// The renames (new -> old name) whose old column's type can be read as the new one's.
fn readable_renames(
    schema: &iceberg::spec::Schema,
    columns: &[DesiredColumn],
    renamed: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    // A rename whose type cannot be read as the new one is a drop and an add (new field id).
    renamed
        .iter()
        .filter(|(new, old)| {
            let old_ty = schema.field_by_name(old).map(|f| f.field_type.as_ref().clone());
            let new_ty = columns.iter().find(|c| &c.name == *new).map(|c| &c.ty);
            matches!((old_ty, new_ty), (Some(o), Some(n)) if type_change(&o, n) != TypeChange::Incompatible)
        })
        .map(|(n, o)| (n.clone(), o.clone()))
        .collect()
}

/// What becomes of the live column `name` of type `ty` (renamed, dropped, widened or
/// retyped, with whether it breaks readers); `None` when it stays as it is.
fn change_of_live_column(
    name: &str,
    ty: &iceberg::spec::Type,
    columns: &[DesiredColumn],
    renamed: &BTreeMap<String, String>,
) -> Option<(ChangeKind, bool)> {
    let now = columns.iter().find(|c| c.name == name);
    match now {
        None if renamed.values().any(|from| from == name) => {
            let to = renamed
                .iter()
                .find(|(_, from)| *from == name)
                .map(|(to, _)| to.clone())
                .unwrap_or_default();
            Some((
                ChangeKind::Renamed {
                    from: name.to_string(),
                    to,
                },
                true,
            ))
        }
        None => Some((
            ChangeKind::Dropped {
                column: name.to_string(),
            },
            true,
        )),
        Some(c) => match type_change(ty, &c.ty) {
            TypeChange::Same => None,
            TypeChange::Widen => Some((
                ChangeKind::Widened {
                    column: name.to_string(),
                    from: ty.to_string(),
                    to: c.ty.to_string(),
                },
                false,
            )),
            TypeChange::Incompatible => Some((
                ChangeKind::Retyped {
                    column: name.to_string(),
                    from: ty.to_string(),
                    to: c.ty.to_string(),
                },
                true,
            )),
        },
    }
}
