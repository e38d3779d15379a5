//! Environments: a run in environment `dev` reads and writes the Iceberg branch `dev` of each
//! table instead of `main`. The run sees each table through a *view* ([`view`]): its `main`
//! moved, in memory only, to the branch's head (or left at `main` where the table has no such
//! branch yet: the branch starts from `main`'s current snapshot, zero copy), marked with the
//! real `main`. Everything a run does (scopes, the file ledger, staging on a parent) then works
//! on the branch unchanged; what it publishes is turned back ([`publishable`]): the branch
//! moves to the new snapshot, `main` stays exactly where it was, and `main`'s snapshot log
//! gains nothing. Readers of `main` see nothing of an environment.

use iceberg::spec::TableMetadata;
use serde_json::{json, Value};

use crate::error::{Error, Result};

/// The table property, in memory only, that marks a view: `{"env": NAME, "main": ID|null,
/// "schema": the table's current schema id}`.
const VIEW: &str = "pipeline.env-view";

/// A ref, in the view only, on the real `main`: whatever keeps the snapshots refs point at
/// (expiry) keeps it while the run works on the view.
const GUARD: &str = "pipeline-env-view-main";

/// Whether `name` can name an environment: letters, digits, `_` and `-` (at most 64), not
/// `main` (the tables' own branch).
pub fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name != "main"
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `metadata` as a run in environment `env` sees it: `main` at the head of branch `env` when
/// the table has it, and the current schema that head's (a schema is the table's, so an
/// environment's schema change lives in its snapshots only), marked as a view (see the module
/// doc).
pub fn view(metadata: &TableMetadata, env: &str) -> Result<TableMetadata> {
    let real_main = metadata.current_snapshot_id();
    let head = metadata
        .snapshot_for_ref(env)
        .map(|s| s.snapshot_id())
        .or(real_main);
    let mut value = to_json(metadata)?;
    set_main(&mut value, head);
    if let Some(id) = real_main {
        value["refs"][GUARD] = json!({"snapshot-id": id, "type": "branch"});
    }
    // The schema is the table's, not a branch's: the environment's is its head's.
    let schema = metadata.current_schema_id();
    if let Some(id) = metadata.snapshot_for_ref(env).and_then(|s| s.schema_id()) {
        value["current-schema-id"] = json!(id);
    }
    let mark = json!({"env": env, "main": real_main, "schema": schema});
    value["properties"][VIEW] = Value::String(mark.to_string());
    from_json(value)
}

/// The metadata to publish for `metadata` (its `main` at the new snapshot) by a run in
/// environment `env`: on `main` (`None`) unchanged; in an environment its branch moves to the
/// new snapshot while `main`, its snapshot log, the table's current schema and its properties
/// are as the table had them (a table the run creates has no `main`).
pub fn publishable(metadata: TableMetadata, env: Option<&str>) -> Result<TableMetadata> {
    let mark = metadata.properties().get(VIEW).cloned();
    let Some(env) = env else {
        return match mark {
            None => Ok(metadata),
            Some(_) => Err(Error::Internal(
                "an environment's view of a table was about to be published on main".into(),
            )),
        };
    };
    let (real_main, schema) = match mark {
        Some(mark) => {
            let mark: Value = serde_json::from_str(&mark)
                .map_err(|e| Error::Internal(format!("a bad environment view mark: {e}")))?;
            if mark["env"].as_str() != Some(env) {
                return Err(Error::Internal(format!(
                    "a view of environment {} published in {env}",
                    mark["env"]
                )));
            }
            (mark["main"].as_i64(), mark["schema"].as_i64())
        }
        None => (None, None),
    };
    let new = metadata.current_snapshot_id();
    let mut value = to_json(&metadata)?;
    if let Some(props) = value["properties"].as_object_mut() {
        props.remove(VIEW);
    }
    if let Some(refs) = value["refs"].as_object_mut() {
        refs.remove(GUARD);
    }
    if let Some(id) = new {
        value["refs"][env] = json!({"snapshot-id": id, "type": "branch"});
        if let Some(log) = value["snapshot-log"].as_array_mut() {
            log.retain(|entry| entry["snapshot-id"].as_i64() != Some(id));
        }
    }
    set_main(&mut value, real_main);
    if let Some(id) = schema {
        // Readers of `main` keep the table's schema; the branch's snapshots name their own.
        value["current-schema-id"] = json!(id);
    }
    from_json(value)
}

/// Points `main` (and the current snapshot) at `id`, or removes it.
fn set_main(value: &mut Value, id: Option<i64>) {
    match id {
        Some(id) => {
            value["current-snapshot-id"] = json!(id);
            value["refs"]["main"] = json!({"snapshot-id": id, "type": "branch"});
        }
        None => {
            value["current-snapshot-id"] = json!(-1);
            if let Some(refs) = value["refs"].as_object_mut() {
                refs.remove("main");
            }
        }
    }
}

fn to_json(metadata: &TableMetadata) -> Result<Value> {
    serde_json::to_value(metadata)
        .map_err(|e| Error::Internal(format!("cannot encode table metadata: {e}")))
}

fn from_json(value: Value) -> Result<TableMetadata> {
    serde_json::from_value(value)
        .map_err(|e| Error::Internal(format!("cannot decode table metadata: {e}")))
}

/// The branches of `metadata` that are environments: every branch but `main`, with its head
/// (the refs map is not public in iceberg 0.10: read from the JSON form).
pub fn env_branches(metadata: &TableMetadata) -> Result<Vec<(String, i64)>> {
    let value = to_json(metadata)?;
    let mut out: Vec<(String, i64)> = value["refs"]
        .as_object()
        .map(|refs| {
            refs.iter()
                .filter(|(name, r)| {
                    name.as_str() != "main" && name.as_str() != GUARD && r["type"] == "branch"
                })
                .filter_map(|(name, r)| Some((name.clone(), r["snapshot-id"].as_i64()?)))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    Ok(out)
}

/// `metadata` without branch `env` (its snapshots stay until an expiry drops them).
pub fn without_branch(metadata: &TableMetadata, env: &str) -> Result<TableMetadata> {
    let mut value = to_json(metadata)?;
    if let Some(refs) = value["refs"].as_object_mut() {
        refs.remove(env);
    }
    from_json(value)
}
