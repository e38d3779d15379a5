//! A table version change as REST catalog updates: what turns `base` into `new`, with the
//! requirements that make the commit a compare-and-set on the branch it moves (`main`, or an
//! environment's branch when only that moves: see [`pinned`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use iceberg::spec::{SnapshotReference, SnapshotRetention, TableMetadata, MAIN_BRANCH};
use iceberg::{TableRequirement, TableUpdate};

use crate::error::Result;

/// One branch's head in two versions of a table (`None`: the branch is absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchMove {
    pub branch: String,
    pub from: Option<i64>,
    pub to: Option<i64>,
}

/// The head of `branch` in `metadata`.
pub fn head(metadata: &TableMetadata, branch: &str) -> Option<i64> {
    metadata.snapshot_for_ref(branch).map(|s| s.snapshot_id())
}

/// Every branch whose head differs between `base` and `new`, `main` first.
pub fn moved_branches(base: &TableMetadata, new: &TableMetadata) -> Result<Vec<BranchMove>> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for metadata in [base, new] {
        names.extend(
            super::env::env_branches(metadata)?
                .into_iter()
                .map(|(n, _)| n),
        );
    }
    let out: Vec<BranchMove> = std::iter::once(MAIN_BRANCH.to_string())
        .chain(names)
        .map(|branch| BranchMove {
            from: head(base, &branch),
            to: head(new, &branch),
            branch,
        })
        .filter(|m| m.from != m.to)
        .collect();
    Ok(out)
}

/// The branches a move from `base` to `new` is a compare-and-set on: `main` (even where it
/// does not move), unless only other branches move (a run in an environment, or its drop):
/// then those, so a run on `main` meanwhile does not refuse it.
pub fn pinned(base: &TableMetadata, new: &TableMetadata) -> Result<Vec<BranchMove>> {
    Ok(pinned_of(moved_branches(base, new)?, base))
}

/// [`pinned`], from the branches that move (`moved`, from [`moved_branches`]).
fn pinned_of(moved: Vec<BranchMove>, base: &TableMetadata) -> Vec<BranchMove> {
    match moved.iter().find(|m| m.branch == MAIN_BRANCH) {
        Some(main) => vec![main.clone()],
        None if moved.is_empty() => {
            let main = head(base, MAIN_BRANCH);
            vec![BranchMove {
                branch: MAIN_BRANCH.to_string(),
                from: main,
                to: main,
            }]
        }
        None => moved,
    }
}

/// Whether a table now at `now` has made the move from `base` to `new`: every pinned branch is
/// where `new` has it (and it moved).
pub fn reached(now: &TableMetadata, base: &TableMetadata, new: &TableMetadata) -> Result<bool> {
    let pinned = pinned(base, new)?;
    Ok(
        pinned.iter().any(|m| m.from != m.to)
            && pinned.iter().all(|m| head(now, &m.branch) == m.to),
    )
}

/// Whether another writer moved a table found at `now` since `base`: it is another table (or
/// gone), or one of the branches the move from `base` to `new` pins is elsewhere.
pub fn moved_since(
    now: Option<&TableMetadata>,
    base: &TableMetadata,
    new: &TableMetadata,
) -> Result<bool> {
    let Some(now) = now else {
        return Ok(true);
    };
    Ok(now.uuid() != base.uuid()
        || pinned(base, new)?
            .iter()
            .any(|m| head(now, &m.branch) != m.from))
}

/// Requirements and updates that move a table from `base` to `new` (as produced by this
/// engine: new schemas, specs and snapshots are added; expired snapshots removed; properties
/// set or removed; branches moved). The commit applies only while the [`pinned`] branches are
/// where `base` has them.
pub fn diff(
    base: &TableMetadata,
    new: &TableMetadata,
) -> Result<(Vec<TableRequirement>, Vec<TableUpdate>)> {
    // The branches' heads are read once (from the metadata's JSON form: see `env_branches`).
    let moved = moved_branches(base, new)?;
    let mut requirements = vec![TableRequirement::UuidMatch { uuid: base.uuid() }];
    for m in pinned_of(moved.clone(), base) {
        requirements.push(TableRequirement::RefSnapshotIdMatch {
            r#ref: m.branch,
            snapshot_id: m.from,
        });
    }
    let mut updates = Vec::new();
    add_schema_updates(base, new, &mut updates);
    add_spec_updates(base, new, &mut updates);
    add_snapshot_updates(base, new, moved, &mut updates);
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

/// The snapshots added after everything in `base` (in sequence order), every branch of
/// `moved` set (or removed), and the snapshots `new` no longer has removed.
fn add_snapshot_updates(
    base: &TableMetadata,
    new: &TableMetadata,
    moved: Vec<BranchMove>,
    updates: &mut Vec<TableUpdate>,
) {
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
    for m in moved {
        updates.push(match m.to {
            Some(id) => TableUpdate::SetSnapshotRef {
                ref_name: m.branch,
                reference: SnapshotReference::new(id, SnapshotRetention::branch(None, None, None)),
            },
            None => TableUpdate::RemoveSnapshotRef { ref_name: m.branch },
        });
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A table with snapshots 1 and 2 (2's parent is 1) and the given branches.
    fn table(refs: serde_json::Value) -> TableMetadata {
        let snapshot = |id: i64, parent: Option<i64>| {
            json!({"snapshot-id": id, "parent-snapshot-id": parent, "sequence-number": id,
                   "timestamp-ms": 1_700_000_000_000i64 + id, "manifest-list": format!("s3://b/t/m{id}.avro"),
                   "summary": {"operation": "append"}, "schema-id": 0})
        };
        let main = refs["main"]["snapshot-id"].clone();
        serde_json::from_value(json!({
            "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "s3://b/t", "last-sequence-number": 2, "last-updated-ms": 1_700_000_000_002i64,
            "last-column-id": 1, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "x", "required": false, "type": "long"}]}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}], "properties": {},
            "current-snapshot-id": if main.is_null() { json!(-1) } else { main },
            "snapshots": [snapshot(1, None), snapshot(2, Some(1))],
            "snapshot-log": [], "metadata-log": [], "refs": refs,
        }))
        .unwrap()
    }

    fn branch(id: i64) -> serde_json::Value {
        json!({"snapshot-id": id, "type": "branch"})
    }

    #[test]
    fn a_move_of_only_an_environment_branch_pins_that_branch_not_main() {
        let base = table(json!({"main": branch(1)}));
        let new = table(json!({"main": branch(1), "dev": branch(2)}));
        let (requirements, updates) = diff(&base, &new).unwrap();
        let requirements = serde_json::to_value(&requirements).unwrap();
        assert_eq!(requirements[1]["ref"], "dev", "{requirements}");
        assert!(requirements[1]["snapshot-id"].is_null(), "{requirements}");
        assert_eq!(requirements.as_array().unwrap().len(), 2);
        let updates = serde_json::to_value(&updates).unwrap();
        assert_eq!(updates.as_array().unwrap().len(), 1, "{updates}");
        assert_eq!(updates[0]["ref-name"], "dev", "{updates}");
        assert_eq!(updates[0]["snapshot-id"], 2, "{updates}");

        // Found with main moved by another writer, the move is still to be made; found
        // with dev at 2, it was made.
        let main_moved = table(json!({"main": branch(2)}));
        assert!(!moved_since(Some(&main_moved), &base, &new).unwrap());
        assert!(!reached(&main_moved, &base, &new).unwrap());
        assert!(reached(&new, &base, &new).unwrap());
        let dev_taken = table(json!({"main": branch(1), "dev": branch(1)}));
        assert!(moved_since(Some(&dev_taken), &base, &new).unwrap());
    }

    #[test]
    fn a_move_of_main_pins_main_and_moves_every_changed_branch() {
        let base = table(json!({"main": branch(1), "dev": branch(2)}));
        let new = table(json!({"main": branch(2)}));
        let (requirements, updates) = diff(&base, &new).unwrap();
        let requirements = serde_json::to_value(&requirements).unwrap();
        assert_eq!(requirements[1]["ref"], "main", "{requirements}");
        assert_eq!(requirements[1]["snapshot-id"], 1, "{requirements}");
        let updates = serde_json::to_value(&updates).unwrap();
        assert_eq!(updates[0]["ref-name"], "main", "{updates}");
        assert_eq!(updates[1]["action"], "remove-snapshot-ref", "{updates}");
        assert_eq!(updates[1]["ref-name"], "dev", "{updates}");
        // Nothing moves (a property change): main is pinned where it is.
        let (requirements, _) = diff(&base, &base).unwrap();
        let requirements = serde_json::to_value(&requirements).unwrap();
        assert_eq!(requirements[1]["ref"], "main", "{requirements}");
        assert_eq!(requirements[1]["snapshot-id"], 1, "{requirements}");
    }
}
