//! Recovery of a table-by-table publish that a killed or failed command left half done (its
//! intent still pending on the control table, see `intent.rs`). The next command that changes
//! tables completes it: tables still at their base move forward, and the run record is
//! written. If a table was moved meanwhile by another writer (neither at its base nor at its
//! target), the intent is rolled back instead: tables already moved go back to their base
//! version, tables still at their base are fenced (moved to a fresh copy of that very
//! version, so that the original publisher, should it still be alive and only slow, fails the
//! compare-and-set of its late move instead of publishing a table with no record), and no run
//! record is written. Moving a table that is already at its target is a no-op, so a recovery
//! racing the original command converges on the same outcome. Fencing needs a catalog whose
//! compare-and-set pins the metadata file (S3 Tables); a REST server pins `main`'s snapshot
//! only, so there the publisher instead reads its intent again before each table's move.

use iceberg::spec::{SnapshotReference, SnapshotRetention, TableMetadata, MAIN_BRANCH};

use super::intent::{finish, intent_of, run_of, write_next, written_if_taken, Intent, IntentEntry};
use crate::catalog::{head, moved_branches, PipelineCatalog, RemoteCatalog, Swap};
use crate::error::{Error, Result};
use crate::records::control_name;
use crate::spec::TableName;

/// What [`recover`] did with a publish a previous command left half done.
#[derive(Debug, Clone)]
pub struct Recovery {
    /// The run whose publish was pending.
    pub run_id: String,
    /// `true`: completed (rolled forward); `false`: undone (rolled back).
    pub completed: bool,
    /// Tables it moved.
    pub tables: Vec<String>,
}

impl std::fmt::Display for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.completed {
            write!(
                f,
                "completed the publish of run {} that an earlier command left half done (moved: {})",
                self.run_id,
                list(&self.tables)
            )
        } else {
            write!(
                f,
                "rolled back the half-done publish of run {}: another writer changed one of its tables meanwhile (moved back: {})",
                self.run_id,
                list(&self.tables)
            )
        }
    }
}

fn list(tables: &[String]) -> String {
    if tables.is_empty() {
        "none".into()
    } else {
        tables.join(", ")
    }
}

/// Where one table of an intent stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// Where the publish found it: not moved yet.
    AtBase,
    /// Where the publish moves it: moved.
    AtTarget,
    /// Neither: another writer moved it.
    Elsewhere,
}

/// What resolving does to one table of an intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Move it from its base to its target (completing the publish).
    Forward,
    /// Move it from its target back to its base (undoing the publish).
    Back,
    /// Move it from its base to a fresh copy of its base (undoing a publish that has not moved
    /// it: the publisher's late move then fails).
    Fence,
    /// Leave it as it is.
    Leave,
}

/// Where a table of `entry` stands when the catalog has it at `location` with `main` at
/// `snapshot` (`None`: the table is gone). A REST server writes metadata files of its own
/// choosing, so there (`by_snapshot`) a table whose `main` is the target snapshot counts as
/// moved whatever its file is called.
fn position_of(
    entry: &IntentEntry,
    now: Option<(&str, Option<i64>)>,
    by_snapshot: bool,
) -> Position {
    match now {
        Some((location, _)) if location == entry.from_location => Position::AtBase,
        Some((location, main))
            if location == entry.metadata_file
                || (by_snapshot && main == entry.to_snapshot && main != entry.from_snapshot) =>
        {
            Position::AtTarget
        }
        _ => Position::Elsewhere,
    }
}

/// How an intent whose tables stand at `positions` is resolved: completed (every table still
/// at its base moves forward) unless some table is elsewhere; then rolled back (every table
/// that reached its target moves back, every table still at its base is fenced, the others
/// are left as they are).
fn resolution(positions: &[Position]) -> (bool, Vec<Step>) {
    let completed = !positions.contains(&Position::Elsewhere);
    let steps = positions
        .iter()
        .map(|p| match (completed, p) {
            (true, Position::AtBase) => Step::Forward,
            (false, Position::AtTarget) => Step::Back,
            (false, Position::AtBase) => Step::Fence,
            _ => Step::Leave,
        })
        .collect();
    (completed, steps)
}

async fn position(remote: &RemoteCatalog, entry: &IntentEntry) -> Result<(TableName, Position)> {
    let table = TableName::parse(&entry.table).ok_or_else(|| {
        Error::Usage(format!(
            "publish record names a bad table `{}`",
            entry.table
        ))
    })?;
    let now = remote.current(&table).await?;
    let branch = entry.branch.as_deref().unwrap_or(MAIN_BRANCH);
    let now = now
        .as_ref()
        .map(|c| (c.location.as_str(), head(&c.metadata, branch)));
    Ok((table, position_of(entry, now, remote.kind == "rest")))
}

/// The version that undoes a move from `old` to `target`: `target` with every branch, the
/// current schema and the default partition spec back where `old` had them, and the snapshots
/// the move added removed. Snapshots the move expired stay expired (a REST server cannot take
/// them back); their file ledger lives on in `target`'s checkpoint, which is kept, so no
/// source file is ever loaded twice after the undo.
fn moved_back(
    target: &TableMetadata,
    old: &TableMetadata,
    target_location: &str,
) -> Result<TableMetadata> {
    let added: Vec<i64> = target
        .snapshots()
        .map(|s| s.snapshot_id())
        .filter(|id| old.snapshot_by_id(*id).is_none())
        .collect();
    let mut builder = target
        .clone()
        .into_builder(Some(target_location.to_string()))
        .set_current_schema(old.current_schema_id())?
        .set_default_partition_spec(old.default_partition_spec_id())?;
    for moved in moved_branches(old, target)? {
        builder = match moved.from {
            Some(id) => builder.set_ref(
                &moved.branch,
                SnapshotReference::new(id, SnapshotRetention::branch(None, None, None)),
            )?,
            None => builder.remove_ref(&moved.branch),
        };
    }
    Ok(builder.remove_snapshots(&added).build()?.metadata)
}

/// Completes `intent` (every table still at its base moves on) or, when a table is elsewhere,
/// moves the tables that reached their target back and fences the ones still at their base;
/// then clears it. Returns what it did.
pub(super) async fn resolve(remote: &RemoteCatalog, intent: &Intent) -> Result<Recovery> {
    let mut tables_at = Vec::new();
    for entry in &intent.entries {
        tables_at.push(position(remote, entry).await?);
    }
    let positions: Vec<Position> = tables_at.iter().map(|(_, p)| *p).collect();
    let (completed, steps) = resolution(&positions);
    let mut tables = Vec::new();
    for ((entry, (table, _)), step) in intent.entries.iter().zip(&tables_at).zip(steps) {
        if take_step(remote, intent, entry, table, step).await? {
            tables.push(entry.table.clone());
        }
    }
    finish(remote, intent, completed).await?;
    Ok(Recovery {
        run_id: run_of(intent),
        completed,
        tables,
    })
}

/// Takes `step` for `table` (`entry` of `intent`); whether the table moved back or forward.
async fn take_step(
    remote: &RemoteCatalog,
    intent: &Intent,
    entry: &IntentEntry,
    table: &TableName,
    step: Step,
) -> Result<bool> {
    match step {
        Step::Forward => {
            let base = remote.read_metadata(&entry.from_location).await?;
            let new = target_of(remote, entry, &base).await?;
            match remote
                .pointers
                .swap(table, &entry.from_location, &base, &entry.metadata_file, &new)
                .await?
            {
                Swap::Moved(_) | Swap::AlreadyThere => Ok(true),
                Swap::Conflict => Err(Error::Catalog {
                    catalog: remote.identity.clone(),
                    message: format!(
                        "table {} moved while this command completed the pending publish of run {}; the publish is still pending: run the command again to finish or undo it",
                        entry.table,
                        run_of(intent)
                    ),
                }),
            }
        }
        Step::Back => {
            // Back to the old version, but only from our target (never over a commit made
            // since), and as a fresh metadata file: a stale forward move expecting the old
            // location then fails instead of redoing the publish.
            let (at, target) = reached(remote, entry, table).await?;
            let old = remote.read_metadata(&entry.from_location).await?;
            let back = moved_back(&target, &old, &at)?;
            let fresh = written_if_taken(remote, &at, &back).await?;
            let swap = remote
                .pointers
                .swap(table, &at, &target, &fresh, &back)
                .await?;
            moved_or_left(table, swap)
        }
        Step::Fence if remote.kind != "rest" => {
            let base = remote.read_metadata(&entry.from_location).await?;
            let fresh = write_next(&remote.file_io, &entry.from_location, &base).await?;
            let swap = remote
                .pointers
                .swap(table, &entry.from_location, &base, &fresh, &base)
                .await?;
            moved_or_left(table, swap)?;
            Ok(false)
        }
        Step::Fence | Step::Leave => Ok(false),
    }
}

/// The metadata a publish moves `entry`'s table to from `base`: its file (S3 Tables), or
/// `base` with the intent's changes applied (REST, where the engine writes no file).
async fn target_of(
    remote: &RemoteCatalog,
    entry: &IntentEntry,
    base: &TableMetadata,
) -> Result<TableMetadata> {
    let Some(updates) = &entry.updates else {
        return remote.read_metadata(&entry.metadata_file).await;
    };
    let mut builder = base.clone().into_builder(Some(entry.from_location.clone()));
    for update in updates {
        builder = update.clone().apply(builder)?;
    }
    Ok(builder.build()?.metadata)
}

/// Where `table`, found at its target, stands: the target's location and metadata (the
/// engine's file on S3 Tables; on REST, the server's file, as the catalog has it now).
async fn reached(
    remote: &RemoteCatalog,
    entry: &IntentEntry,
    table: &TableName,
) -> Result<(String, TableMetadata)> {
    if remote.takes_metadata_files() {
        let target = remote.read_metadata(&entry.metadata_file).await?;
        return Ok((entry.metadata_file.clone(), target));
    }
    let now = remote.current(table).await?.ok_or_else(|| Error::Catalog {
        catalog: remote.identity.clone(),
        message: format!("table {table} disappeared while its publish was being rolled back"),
    })?;
    Ok((now.location, now.metadata))
}

/// Whether a table moved back; one another writer moved meanwhile stays as that writer put it.
fn moved_or_left(table: &TableName, swap: Swap) -> Result<bool> {
    match swap {
        Swap::Moved(_) | Swap::AlreadyThere => Ok(true),
        Swap::Conflict => {
            tracing::warn!(
                table = %table,
                "moved by another writer while rolling back; left as that writer put it"
            );
            Ok(false)
        }
    }
}

/// Completes (or, when a table moved meanwhile in a conflicting way, undoes) a publish that a
/// killed or failed command left half done (see the module doc). Only remote catalogs without
/// multi-table commits can be left so; for the others this does nothing. Every command that
/// changes tables calls it first, holding the pipeline's run lock.
pub async fn recover(catalog: &PipelineCatalog) -> Result<Option<Recovery>> {
    let Some(remote) = catalog.remote() else {
        return Ok(None);
    };
    let name = control_name();
    let Some(control) = remote.current(&name).await? else {
        return Ok(None);
    };
    let Some(intent) = intent_of(&control.metadata)? else {
        return Ok(None);
    };
    let recovery = resolve(remote, &intent).await?;
    tracing::info!("{recovery}");
    Ok(Some(recovery))
}

/// The run whose table-by-table publish is in progress on a remote catalog right now (its
/// intent is pending), if any: its new metadata files are not yet any table's current ones.
pub async fn publish_in_progress(catalog: &PipelineCatalog) -> Result<Option<String>> {
    let Some(remote) = catalog.remote() else {
        return Ok(None);
    };
    let Some(control) = remote.current(&control_name()).await? else {
        return Ok(None);
    };
    Ok(intent_of(&control.metadata)?.map(|intent| run_of(&intent)))
}

#[cfg(test)]
mod tests {
    use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};

    use super::Position::{AtBase, AtTarget, Elsewhere};
    use super::Step::{Back, Fence, Forward, Leave};
    use super::*;
    use crate::commit::fixture::{published, Warehouse, MARCH_2024};
    use crate::commit::target::TableTarget;
    use crate::commit::WriteMode;

    const BASE: &str = "s3://b/t/metadata/00001-a.metadata.json";
    const TARGET: &str = "s3://b/t/metadata/00002-b.metadata.json";

    fn entry() -> IntentEntry {
        IntentEntry {
            table: "silver.orders".into(),
            from_location: BASE.into(),
            from_snapshot: Some(1),
            branch: None,
            to_snapshot: Some(2),
            metadata_file: TARGET.into(),
            updates: None,
        }
    }

    #[test]
    fn a_table_is_at_its_base_its_target_or_elsewhere() {
        let e = entry();
        assert_eq!(position_of(&e, Some((BASE, Some(1))), false), AtBase);
        assert_eq!(position_of(&e, Some((TARGET, Some(2))), false), AtTarget);
        // A REST server names the metadata file itself: main at the target snapshot counts.
        let renamed = "s3://b/t/metadata/00002-server.metadata.json";
        assert_eq!(position_of(&e, Some((renamed, Some(2))), true), AtTarget);
        assert_eq!(position_of(&e, Some((renamed, Some(2))), false), Elsewhere);
        // Another writer's commit, or the table gone.
        let theirs = "s3://b/t/metadata/00003-c.metadata.json";
        assert_eq!(position_of(&e, Some((theirs, Some(3))), true), Elsewhere);
        assert_eq!(position_of(&e, None, true), Elsewhere);
        // A move that keeps main where it was is never recognized by its snapshot.
        let same = IntentEntry {
            to_snapshot: Some(1),
            ..entry()
        };
        assert_eq!(
            position_of(&same, Some((renamed, Some(1))), true),
            Elsewhere
        );
    }

    #[test]
    fn a_publish_killed_midway_is_completed() {
        assert_eq!(
            resolution(&[AtTarget, AtBase, AtBase]),
            (true, vec![Leave, Forward, Forward])
        );
        assert_eq!(
            resolution(&[AtBase, AtBase]),
            (true, vec![Forward, Forward])
        );
        assert_eq!(
            resolution(&[AtTarget, AtTarget]),
            (true, vec![Leave, Leave])
        );
    }

    #[test]
    fn a_table_another_writer_moved_rolls_the_whole_publish_back() {
        assert_eq!(
            resolution(&[AtTarget, Elsewhere, AtBase]),
            (false, vec![Back, Leave, Fence])
        );
        assert_eq!(resolution(&[Elsewhere]), (false, vec![Leave]));
    }

    #[tokio::test]
    async fn moving_back_restores_main_and_schema_and_drops_the_snapshots_added() {
        let w = Warehouse::new();
        let t = w.new_table("silver", "orders");
        let a = w.file(&t, "a", MARCH_2024, 10);
        let first = w.stage(t, vec![a], WriteMode::Append).await;
        let old = first.published_metadata().expect("published");
        // The publish being undone added a column and a snapshot.
        let base = published(&first);
        let wider = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "order_date", Type::Primitive(PrimitiveType::Date)).into(),
                NestedField::optional(3, "coupon", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()
            .expect("schema");
        let evolved = TableTarget {
            metadata: base
                .metadata
                .clone()
                .into_builder(None)
                .add_current_schema(wider)
                .expect("schema")
                .build()
                .expect("metadata")
                .metadata,
            ..base
        };
        let b = w.file(&evolved, "b", MARCH_2024, 5);
        let second = w.stage(evolved, vec![b], WriteMode::Append).await;
        let target = second.published_metadata().expect("published");
        assert_ne!(target.current_schema_id(), old.current_schema_id());

        let back = moved_back(&target, &old, TARGET).expect("moved back");
        assert_eq!(back.current_snapshot_id(), Some(first.snapshot_id));
        assert!(back.snapshot_by_id(second.snapshot_id).is_none());
        assert_eq!(back.current_schema_id(), old.current_schema_id());
        assert_eq!(
            back.default_partition_spec_id(),
            old.default_partition_spec_id()
        );
    }
}
