//! A table version change as REST catalog updates: what turns `base` into `new`, with the
//! requirements that make the commit a compare-and-set on `main`.

use std::collections::{HashMap, HashSet};

use iceberg::spec::{SnapshotReference, SnapshotRetention, TableMetadata, MAIN_BRANCH};
use iceberg::{TableRequirement, TableUpdate};

use crate::error::Result;

/// Requirements and updates that move a table from `base` to `new` (as produced by this
/// engine: new schemas, specs and snapshots are added; expired snapshots removed; properties
/// set or removed; `main` moved). The commit applies only while `main` is where `base` has it.
pub fn diff(
    base: &TableMetadata,
    new: &TableMetadata,
) -> Result<(Vec<TableRequirement>, Vec<TableUpdate>)> {
    let requirements = vec![
        TableRequirement::UuidMatch { uuid: base.uuid() },
        TableRequirement::RefSnapshotIdMatch {
            r#ref: MAIN_BRANCH.to_string(),
            snapshot_id: base.current_snapshot_id(),
        },
    ];
    let mut updates = Vec::new();
    add_schema_updates(base, new, &mut updates);
    add_spec_updates(base, new, &mut updates);
    add_snapshot_updates(base, new, &mut updates);
    add_property_updates(base, new, &mut updates);
    Ok((requirements, updates))
}

/// The schemas `new` has and `base` has not, and `new`'s current schema when it changed.
fn add_schema_updates(base: &TableMetadata, new: &TableMetadata, updates: &mut Vec<TableUpdate>) {
    let base_schemas: HashSet<i32> = base.schemas_iter().map(|s| s.schema_id()).collect();
    for schema in new.schemas_iter() {
        if !base_schemas.contains(&schema.schema_id()) {
            updates.push(TableUpdate::AddSchema {
                schema: schema.as_ref().clone(),
            });
        }
    }
    if new.current_schema_id() != base.current_schema_id() {
        let added = !base_schemas.contains(&new.current_schema_id());
        updates.push(TableUpdate::SetCurrentSchema {
            // -1: the schema added last in this commit (the server may renumber it).
            schema_id: if added { -1 } else { new.current_schema_id() },
        });
    }
}

/// The partition specs `new` has and `base` has not, and `new`'s default spec when it
/// changed.
fn add_spec_updates(base: &TableMetadata, new: &TableMetadata, updates: &mut Vec<TableUpdate>) {
    let base_specs: HashSet<i32> = base.partition_specs_iter().map(|s| s.spec_id()).collect();
    for spec in new.partition_specs_iter() {
        if !base_specs.contains(&spec.spec_id()) {
            updates.push(TableUpdate::AddSpec {
                spec: spec.as_ref().clone().into_unbound(),
            });
        }
    }
    if new.default_partition_spec_id() != base.default_partition_spec_id() {
        let added = !base_specs.contains(&new.default_partition_spec_id());
        updates.push(TableUpdate::SetDefaultSpec {
            spec_id: if added {
                -1
            } else {
                new.default_partition_spec_id()
            },
        });
    }
}

/// The snapshots added after everything in `base` (in sequence order), `main` moved (or
/// removed) when it changed, and the snapshots `new` no longer has removed.
fn add_snapshot_updates(base: &TableMetadata, new: &TableMetadata, updates: &mut Vec<TableUpdate>) {
    let base_snapshots: HashSet<i64> = base.snapshots().map(|s| s.snapshot_id()).collect();
    let new_snapshots: HashSet<i64> = new.snapshots().map(|s| s.snapshot_id()).collect();
    // Only snapshots newer than everything in `base`: moving a table back to an older version
    // (a rollback) must not re-add snapshots `base` expired.
    let mut added: Vec<_> = new
        .snapshots()
        .filter(|s| {
            !base_snapshots.contains(&s.snapshot_id())
                && s.sequence_number() > base.last_sequence_number()
        })
        .collect();
    added.sort_by_key(|s| s.sequence_number());
    for snapshot in added {
        updates.push(TableUpdate::AddSnapshot {
            snapshot: snapshot.as_ref().clone(),
        });
    }
    if new.current_snapshot_id() != base.current_snapshot_id() {
        match new.current_snapshot_id() {
            Some(id) => updates.push(TableUpdate::SetSnapshotRef {
                ref_name: MAIN_BRANCH.to_string(),
                reference: SnapshotReference::new(id, SnapshotRetention::branch(None, None, None)),
            }),
            None => updates.push(TableUpdate::RemoveSnapshotRef {
                ref_name: MAIN_BRANCH.to_string(),
            }),
        }
    }
    let mut removed: Vec<i64> = base_snapshots.difference(&new_snapshots).copied().collect();
    if !removed.is_empty() {
        removed.sort();
        updates.push(TableUpdate::RemoveSnapshots {
            snapshot_ids: removed,
        });
    }
}

/// The properties `new` sets to another value than `base`, and those it no longer has.
fn add_property_updates(base: &TableMetadata, new: &TableMetadata, updates: &mut Vec<TableUpdate>) {
    let changed: HashMap<String, String> = new
        .properties()
        .iter()
        .filter(|(k, v)| base.properties().get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !changed.is_empty() {
        updates.push(TableUpdate::SetProperties { updates: changed });
    }
    let mut removals: Vec<String> = base
        .properties()
        .keys()
        .filter(|k| !new.properties().contains_key(*k))
        .cloned()
        .collect();
    if !removals.is_empty() {
        removals.sort();
        updates.push(TableUpdate::RemoveProperties { removals });
    }
}
