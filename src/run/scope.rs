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

use iceberg::spec::TableMetadata;
use iceberg::table::Table;
use sha2::{Digest, Sha256};

use crate::commit::{changed_files, file_times, FileTimes, Grain, PartitionRange};
use crate::error::Result;
use crate::spec::{TableName, TransformJob, TransformMode};

/// Summary key: JSON map of input table -> snapshot id the snapshot was computed from.
pub const INPUTS_KEY: &str = "pipeline.inputs";
/// Summary key: fingerprint of the SQL and partitioning that produced the snapshot.
pub const TRANSFORM_KEY: &str = "pipeline.transform";

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
        h.update(
            crate::quality::violation_predicate(&e.check)
                .unwrap_or_default()
                .as_bytes(),
        );
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
            INPUTS_KEY.to_string(),
            serde_json::to_string(&ids).unwrap_or_default(),
        ),
        (TRANSFORM_KEY.to_string(), fingerprint(job)),
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
    let Some(snapshot) = current.and_then(|m| m.current_snapshot()) else {
        return Ok(Scope::Full("new table".into()));
    };
    let summary = &snapshot.summary().additional_properties;
    let recorded: Option<BTreeMap<String, Option<i64>>> = summary
        .get(INPUTS_KEY)
        .and_then(|v| serde_json::from_str(v).ok());
    let Some(recorded) = recorded else {
        return Ok(Scope::Full(
            "no record of the inputs of its last run".into(),
        ));
    };
    if summary.get(TRANSFORM_KEY) != Some(&fingerprint(job)) {
        return Ok(Scope::Full("SQL or partitioning changed".into()));
    }
    let mut changed = Vec::new();
    for (name, table) in inputs {
        match recorded.get(&name.to_string()) {
            Some(id) if *id == table.metadata().current_snapshot_id() => {}
            Some(id) => changed.push((name, table, *id)),
            None => return Ok(Scope::Full(format!("new input {name}"))),
        }
    }
    if changed.is_empty() && forced.is_none() {
        return Ok(Scope::UpToDate);
    }
    let names = || {
        changed
            .iter()
            .map(|(n, _, _)| n.to_string())
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
    for (name, table, old_id) in changed {
        let Some(column) = job.range_column(name) else {
            return Ok(Scope::Full(format!(
                "{name} changed and is not in incremental_by"
            )));
        };
        let metadata = table.metadata();
        let Some(field) = metadata.current_schema().field_by_name(column) else {
            return Ok(Scope::Full(format!("{name} has no column `{column}`")));
        };
        let field_id = field.id;
        let files = changed_files(
            table.file_io(),
            metadata,
            old_id,
            metadata.current_snapshot_id(),
        )
        .await?;
        let Some(files) = files else {
            return Ok(Scope::Full(format!(
                "{name}: the snapshot its last run read is gone"
            )));
        };
        for file in &files {
            match file_times(file, field_id) {
                FileTimes::Within(lo, hi) => range.add_instants(lo, hi),
                FileTimes::AllNull => {}
                FileTimes::Unknown => {
                    return Ok(Scope::Full(format!(
                        "{name}: file {} has no min/max for `{column}`",
                        file.file_path()
                    )))
                }
            }
        }
    }
    Ok(if range.is_empty() {
        Scope::UpToDate
    } else {
        Scope::Range(range)
    })
}
