//! How much of a transform's table a run recomputes: nothing (its inputs did not change since
//! the table's last run), a partition range (the partitions whose input rows changed, plus any
//! range a backfill asks for), or everything.
//!
//! Every transform snapshot records the input snapshots it was computed from
//! (`pipeline.inputs`) and a fingerprint of its SQL and partitioning (`pipeline.transform`).
//! The next run compares them with the inputs it reads now; for inputs declared in
//! `incremental_by`, the files that changed in between (added or removed) give, through their
//! column bounds, the time ranges to recompute.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use iceberg::spec::TableMetadata;
use iceberg::table::Table;
use sha2::{Digest, Sha256};

use crate::commit::summary::{INPUTS, TRANSFORM};
use crate::commit::{
    data_changes, file_times, has_words, only_replaced_since, FileTimes, PartitionRange,
};
use crate::error::Result;
use crate::spec::{violation_predicate, Grain, TableName, TransformJob, TransformMode};

/// What a run does to one transform's table.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    /// The inputs and the SQL are as the table's last run saw them: no new snapshot.
    UpToDate,
    /// Recompute and overwrite the whole table, for the reason given.
    Full(String),
    /// Recompute and replace exactly these partitions.
    Range(PartitionRange),
}

impl Scope {
    /// How the scope reads in progress lines and reports.
    pub fn describe(&self) -> String {
        match self {
            Scope::UpToDate => "up to date".into(),
            Scope::Full(why) => format!("full refresh ({why})"),
            Scope::Range(r) => format!("replace {r}"),
        }
    }
}

/// A backfill's request for one table: every partition overlapping `[from, to]` (inclusive,
/// microseconds since the epoch).
#[derive(Debug, Clone, Copy)]
pub struct Forced {
    pub from: i64,
    pub to: i64,
}

/// Fingerprint of what defines a transform's output besides its inputs: SQL, partitioning
/// and `drop` expectations.
pub fn fingerprint(job: &TransformJob) -> String {
    let mut h = Sha256::new();
    h.update(job.sql.as_bytes());
    for p in &job.partition_by {
        h.update(b"\npartition_by ");
        h.update(p.text.as_bytes());
    }
    // Rows a `drop` expectation removes are part of the output's definition.
    for e in &job.drops {
        h.update(b"\ndrop ");
        h.update(e.name.as_bytes());
        h.update(b" ");
        h.update(violation_predicate(&e.check).unwrap_or_default().as_bytes());
    }
    format!("{:x}", h.finalize())[..32].to_string()
}

/// The summary properties that let the next run decide its scope.
pub fn scope_properties(
    job: &TransformJob,
    inputs: &[(TableName, Table)],
) -> [(String, String); 2] {
    let ids: BTreeMap<String, Option<i64>> = inputs
        .iter()
        .map(|(n, t)| (n.to_string(), t.metadata().current_snapshot_id()))
        .collect();
    [
        (
            INPUTS.to_string(),
            serde_json::to_string(&ids).unwrap_or_default(),
        ),
        (TRANSFORM.to_string(), fingerprint(job)),
    ]
}

/// Decides the scope of `job` given its table as it is (`None`: not created yet) and the
/// inputs as this run reads them.
pub async fn decide(
    job: &TransformJob,
    current: Option<&TableMetadata>,
    inputs: &[(TableName, Table)],
    forced: Option<Forced>,
    full_refresh: bool,
) -> Result<Scope> {
    if full_refresh {
        return Ok(Scope::Full("--full-refresh".into()));
    }
    let changed = match changed_inputs(job, current, inputs) {
        ControlFlow::Continue(changed) => changed,
        ControlFlow::Break(scope) => return Ok(scope),
    };
    if changed.is_empty() && forced.is_none() {
        return Ok(Scope::UpToDate);
    }
    let names = || {
        changed
            .iter()
            .map(|c| c.name.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let time_field = job
        .time_partition()
        .and_then(|p| Some((p.field_name(), Grain::of(p.transform)?)));
    let Some((field, grain)) = time_field else {
        return Ok(Scope::Full(format!("{} changed", names())));
    };
    if job.mode != TransformMode::ReplacePartitions && forced.is_none() {
        return Ok(Scope::Full(format!("{} changed", names())));
    }
    let mut range = PartitionRange::new(field, grain);
    if let Some(f) = forced {
        range.add_instants(f.from, f.to);
    }
    for input in &changed {
        if let ControlFlow::Break(scope) = add_changed_files(job, input, &mut range).await? {
            return Ok(scope);
        }
    }
    Ok(if range.is_empty() {
        Scope::UpToDate
    } else {
        Scope::Range(range)
    })
}

/// An input whose rows changed since the table's last run.
struct ChangedInput<'a> {
    name: &'a TableName,
    table: &'a Table,
    /// The snapshot of it that the last run read.
    old_id: Option<i64>,
}

/// The inputs whose rows changed since the table's last run, in `inputs`' order; `Break`
/// with a full refresh when the table is new, its last run recorded no inputs, its SQL or
/// partitioning changed, or an input is new.
fn changed_inputs<'a>(
    job: &TransformJob,
    current: Option<&TableMetadata>,
    inputs: &'a [(TableName, Table)],
) -> ControlFlow<Scope, Vec<ChangedInput<'a>>> {
    let Some(snapshot) = current.and_then(|m| m.current_snapshot()) else {
        return ControlFlow::Break(Scope::Full("new table".into()));
    };
    let summary = &snapshot.summary().additional_properties;
    let recorded: Option<BTreeMap<String, Option<i64>>> = summary
        .get(INPUTS)
        .and_then(|v| serde_json::from_str(v).ok());
    let Some(recorded) = recorded else {
        return ControlFlow::Break(Scope::Full(
            "no record of the inputs of its last run".into(),
        ));
    };
    if summary.get(TRANSFORM) != Some(&fingerprint(job)) {
        return ControlFlow::Break(Scope::Full("SQL or partitioning changed".into()));
    }
    // The words live in the table's schema and properties: written with a new version of it.
    if current.is_some_and(|m| !has_words(m, &job.docs)) {
        return ControlFlow::Break(Scope::Full("descriptions changed".into()));
    }
    let mut changed = Vec::new();
    for (name, table) in inputs {
        match recorded.get(&name.to_string()) {
            Some(id) if *id == table.metadata().current_snapshot_id() => {}
            // Only compacted (or manifests rewritten) since: the same rows.
            Some(id) if id.is_some() && only_replaced_since(table.metadata(), *id) => {}
            Some(id) => changed.push(ChangedInput {
                name,
                table,
                old_id: *id,
            }),
            None => return ControlFlow::Break(Scope::Full(format!("new input {name}"))),
        }
    }
    ControlFlow::Continue(changed)
}

/// Adds to `range` the time ranges (by the input's `incremental_by` column) of the files
/// added to or removed from `input` since the last run; `Break` with a full refresh when
/// they cannot be known.
async fn add_changed_files(
    job: &TransformJob,
    input: &ChangedInput<'_>,
    range: &mut PartitionRange,
) -> Result<ControlFlow<Scope>> {
    let (name, table, old_id) = (input.name, input.table, input.old_id);
    let Some(column) = job.range_column(name) else {
        return Ok(ControlFlow::Break(Scope::Full(format!(
            "{name} changed and is not in incremental_by"
        ))));
    };
    let metadata = table.metadata();
    let Some(field) = metadata.current_schema().field_by_name(column) else {
        return Ok(ControlFlow::Break(Scope::Full(format!(
            "{name} has no column `{column}`"
        ))));
    };
    let field_id = field.id;
    let files = data_changes(
        table.file_io(),
        metadata,
        old_id,
        metadata.current_snapshot_id(),
    )
    .await?;
    let Some(files) = files else {
        return Ok(ControlFlow::Break(Scope::Full(format!(
            "{name}: the snapshot its last run read is gone"
        ))));
    };
    for file in &files {
        match file_times(file, field_id) {
            FileTimes::Within(lo, hi) => range.add_instants(lo, hi),
            FileTimes::AllNull => {}
            FileTimes::Unknown => {
                return Ok(ControlFlow::Break(Scope::Full(format!(
                    "{name}: file {} has no min/max for `{column}`",
                    file.file_path()
                ))))
            }
        }
    }
    Ok(ControlFlow::Continue(()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use iceberg::spec::TableMetadata;

    use super::*;
    use crate::commit::fixture::{months, published, reader, Warehouse, MARCH_2024};
    use crate::commit::{stage_snapshot, StagedTable, WriteMode};
    use crate::spec::{Grain, Origin, PartitionField, RangeInput, DEFAULT_TARGET_FILE_SIZE};

    fn name(text: &str) -> TableName {
        TableName::parse(text).expect("table name")
    }

    /// `silver.orders` from `bronze.orders`, partitioned by month(order_date).
    fn job(mode: TransformMode, incremental: bool) -> TransformJob {
        TransformJob {
            table: name("silver.orders"),
            sql_file: "sql/shop/silver_orders.sql".into(),
            sql: "SELECT id, order_date FROM bronze.orders".into(),
            partition_by: vec![PartitionField::parse("month(order_date)").expect("partition")],
            mode,
            incremental_by: if incremental {
                vec![RangeInput {
                    table: name("bronze.orders"),
                    column: "order_date".into(),
                    line: 9,
                }]
            } else {
                Vec::new()
            },
            batch_rows: None,
            target_file_size: DEFAULT_TARGET_FILE_SIZE,
            origin: Origin {
                file: "pipelines/shop.toml".into(),
                line: 7,
            },
            drops: Vec::new(),
            erase: Default::default(),
            docs: Default::default(),
        }
    }

    /// A bronze table with one file of March 2024, and `job`'s table computed from it.
    struct World {
        w: Warehouse,
        bronze: StagedTable,
        output: TableMetadata,
    }

    async fn world_of(job: &TransformJob, record_inputs: bool) -> World {
        let w = Warehouse::new();
        let t = w.new_table("bronze", "orders");
        let a = w.file(&t, "a", MARCH_2024, 10);
        let bronze = w.stage(t, vec![a], WriteMode::Append).await;
        let inputs = [(name("bronze.orders"), reader(&w, &bronze))];
        let recorded: &[(TableName, Table)] = if record_inputs { &inputs } else { &[] };
        let t = w.new_table("silver", "orders");
        let out = w.file(&t, "out", MARCH_2024, 10);
        let properties: HashMap<String, String> =
            scope_properties(job, recorded).into_iter().collect();
        let output = stage_snapshot(t, vec![out], &w.file_io, properties, WriteMode::Overwrite)
            .await
            .expect("staged")
            .published_metadata()
            .expect("published");
        World { w, bronze, output }
    }

    impl World {
        /// The bronze table after one more append of `file` (a name, a month, bounds).
        async fn bronze_after(&self, file: &str, month: i32, bounds: bool) -> Table {
            let t = published(&self.bronze);
            let f = if bounds {
                self.w.file(&t, file, month, 3)
            } else {
                self.w.file_with_bounds(&t, file, month, 3, None)
            };
            let next = self.w.stage(t, vec![f], WriteMode::Append).await;
            reader(&self.w, &next)
        }

        fn bronze_now(&self) -> Table {
            reader(&self.w, &self.bronze)
        }

        async fn decide(
            &self,
            job: &TransformJob,
            input: Table,
            forced: Option<Forced>,
            full_refresh: bool,
        ) -> Scope {
            decide(
                job,
                Some(&self.output),
                &[(name("bronze.orders"), input)],
                forced,
                full_refresh,
            )
            .await
            .expect("scope")
        }
    }

    #[tokio::test]
    async fn unchanged_inputs_and_sql_are_up_to_date_and_anything_else_is_said() {
        let replace = job(TransformMode::ReplacePartitions, true);
        let world = world_of(&replace, true).await;
        assert_eq!(
            world
                .decide(&replace, world.bronze_now(), None, false)
                .await,
            Scope::UpToDate
        );
        assert_eq!(
            world.decide(&replace, world.bronze_now(), None, true).await,
            Scope::Full("--full-refresh".into())
        );
        let mut edited = replace.clone();
        edited.sql.push_str(" WHERE id > 0");
        assert_eq!(
            world.decide(&edited, world.bronze_now(), None, false).await,
            Scope::Full("SQL or partitioning changed".into())
        );
        let new_table = decide(&replace, None, &[], None, false)
            .await
            .expect("scope");
        assert_eq!(new_table, Scope::Full("new table".into()));
    }

    #[tokio::test]
    async fn changed_input_rows_select_exactly_their_partitions() {
        let replace = job(TransformMode::ReplacePartitions, true);
        let world = world_of(&replace, true).await;
        let april = world.bronze_after("b", MARCH_2024 + 1, true).await;
        assert_eq!(
            world.decide(&replace, april, None, false).await,
            Scope::Range(months(&[MARCH_2024 + 1]))
        );
        // A backfill adds its range to what changed.
        let may = Forced {
            from: Grain::Month.start_of(MARCH_2024 + 2),
            to: Grain::Month.start_of(MARCH_2024 + 2) + 1,
        };
        let april = world.bronze_after("b", MARCH_2024 + 1, true).await;
        assert_eq!(
            world.decide(&replace, april, Some(may), false).await,
            Scope::Range(months(&[MARCH_2024 + 1, MARCH_2024 + 2]))
        );
        // A backfill of an unchanged table replaces just its range.
        assert_eq!(
            world
                .decide(&replace, world.bronze_now(), Some(may), false)
                .await,
            Scope::Range(months(&[MARCH_2024 + 2]))
        );
    }

    #[tokio::test]
    async fn a_change_that_cannot_be_ranged_recomputes_the_whole_table() {
        let replace = job(TransformMode::ReplacePartitions, true);
        let world = world_of(&replace, true).await;
        let unbounded = world.bronze_after("nobounds", MARCH_2024 + 1, false).await;
        let scope = world.decide(&replace, unbounded, None, false).await;
        assert!(
            matches!(&scope, Scope::Full(why) if why.contains("has no min/max for `order_date`")),
            "{scope:?}"
        );
        let not_ranged = job(TransformMode::ReplacePartitions, false);
        let world = world_of(&not_ranged, true).await;
        let april = world.bronze_after("b", MARCH_2024 + 1, true).await;
        assert_eq!(
            world.decide(&not_ranged, april, None, false).await,
            Scope::Full("bronze.orders changed and is not in incremental_by".into())
        );
        let full = job(TransformMode::FullRefresh, true);
        let world = world_of(&full, true).await;
        let april = world.bronze_after("b", MARCH_2024 + 1, true).await;
        assert_eq!(
            world.decide(&full, april, None, false).await,
            Scope::Full("bronze.orders changed".into())
        );
    }

    #[tokio::test]
    async fn an_input_the_last_run_did_not_read_is_a_full_refresh() {
        let replace = job(TransformMode::ReplacePartitions, true);
        let world = world_of(&replace, false).await;
        assert_eq!(
            world
                .decide(&replace, world.bronze_now(), None, false)
                .await,
            Scope::Full("new input bronze.orders".into())
        );
    }

    #[tokio::test]
    async fn a_compacted_input_changed_no_row() {
        let replace = job(TransformMode::ReplacePartitions, true);
        let full = job(TransformMode::FullRefresh, false);
        for j in [&replace, &full] {
            let world = world_of(j, true).await;
            // bronze's March file rewritten into another (a compaction): the same rows.
            let t = published(&world.bronze);
            let c = world.w.file(&t, "c", MARCH_2024, 10);
            let removed = world.bronze.files.iter().map(|f| f.file_path().to_string());
            let compacted = world
                .w
                .stage(t, vec![c], WriteMode::Compact(removed.collect()))
                .await;
            assert_eq!(
                world
                    .decide(j, reader(&world.w, &compacted), None, false)
                    .await,
                Scope::UpToDate
            );
            if j.mode != TransformMode::ReplacePartitions {
                continue;
            }
            // An append after it: only the appended rows' month is recomputed.
            let t = published(&compacted);
            let d = world.w.file(&t, "d", MARCH_2024 + 2, 3);
            let appended = world.w.stage(t, vec![d], WriteMode::Append).await;
            assert_eq!(
                world
                    .decide(j, reader(&world.w, &appended), None, false)
                    .await,
                Scope::Range(months(&[MARCH_2024 + 2]))
            );
        }
    }
}
