//! `pipeline check [TABLE]`: is the lake intact? For every table (or one), its metadata is
//! read, and every file its current snapshot needs is looked at: the manifest list, each
//! manifest, and each live data file, which must exist with the size the manifest records.
//! Nothing is changed. A damaged table is reported with each bad file and what is wrong; the
//! others are checked all the same.

use futures::stream::{self, StreamExt};
use iceberg::io::FileIO;
use serde::Serialize;

use crate::catalog::PipelineCatalog;
use crate::commit::ledger::CHECKPOINT_KEY;
use crate::commit::manifest_list;
use crate::commit::summary::RUN_ID;
use crate::error::{Error, Result};
use crate::spec::TableName;

/// Files looked at in parallel (stat calls; on object stores, HEAD requests).
const PARALLEL: usize = 16;

/// One file that is not as the table's metadata says.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Problem {
    pub file: String,
    pub problem: String,
}

/// What checking one table found.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TableCheck {
    pub table: String,
    /// The current snapshot checked (`None`: the table has none, or its metadata is unreadable).
    #[serde(with = "crate::id_text::option", default)]
    pub snapshot: Option<i64>,
    /// The run that wrote the current snapshot, the one to roll back when it is damaged.
    pub run: Option<String>,
    /// Files looked at: metadata, manifest list, manifests, data files.
    pub files_checked: u64,
    pub problems: Vec<Problem>,
    /// The embedded catalog's warehouse, when the table's files lie outside it (a copied or
    /// moved project: its catalog points at another warehouse's files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_warehouse: Option<String>,
}

impl TableCheck {
    /// Every file the current snapshot needs is there as recorded.
    pub fn intact(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks `only` (default: every table of the catalog), sorted by table.
pub async fn check(catalog: &PipelineCatalog, only: Option<&TableName>) -> Result<Vec<TableCheck>> {
    let tables = match only {
        Some(t) => vec![t.clone()],
        None => catalog.list_tables().await?,
    };
    let mut out = Vec::with_capacity(tables.len());
    for name in tables {
        out.push(check_table(catalog, &name).await?);
    }
    Ok(out)
}

async fn check_table(catalog: &PipelineCatalog, name: &TableName) -> Result<TableCheck> {
    let mut result = TableCheck {
        table: name.to_string(),
        snapshot: None,
        run: None,
        files_checked: 1,
        problems: Vec::new(),
        outside_warehouse: None,
    };
    let table = match catalog.load_existing(name).await {
        Ok(t) => t,
        Err(e) => {
            result.problems.push(Problem {
                file: "(metadata)".into(),
                problem: e.to_string(),
            });
            return Ok(result);
        }
    };
    let metadata = table.metadata();
    let file_io = table.file_io();
    result.outside_warehouse = catalog
        .outside_warehouse(metadata.location())
        .map(|root| root.display().to_string());
    if let Some(checkpoint) = metadata.properties().get(CHECKPOINT_KEY) {
        result.files_checked += 1;
        if let Some(p) = look_at(file_io, checkpoint.clone(), None).await {
            result.problems.push(p);
        }
    }
    let Some(snapshot) = metadata.current_snapshot() else {
        return Ok(result);
    };
    result.snapshot = Some(snapshot.snapshot_id());
    result.run = snapshot
        .summary()
        .additional_properties
        .get(RUN_ID)
        .cloned();
    result.files_checked += 1;
    let list = match manifest_list(file_io, metadata, snapshot).await {
        Ok(list) => list,
        Err(e) => {
            result.problems.push(Problem {
                file: snapshot.manifest_list().to_string(),
                problem: format!("the manifest list cannot be read: {}", what(e)),
            });
            return Ok(result);
        }
    };
    let mut data_files = Vec::new();
    for manifest_file in list.entries() {
        result.files_checked += 1;
        match manifest_file.load_manifest(file_io).await {
            Ok(manifest) => {
                for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
                    data_files.push((
                        entry.file_path().to_string(),
                        entry.data_file().file_size_in_bytes(),
                    ));
                }
            }
            Err(e) => result.problems.push(Problem {
                file: manifest_file.manifest_path.clone(),
                problem: format!("the manifest cannot be read: {}", what(e.into())),
            }),
        }
    }
    result.files_checked += data_files.len() as u64;
    let problems: Vec<Option<Problem>> = stream::iter(data_files)
        .map(|(path, size)| look_at(file_io, path, Some(size)))
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    result.problems.extend(problems.into_iter().flatten());
    result.problems.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(result)
}

/// What is wrong, without the path the caller names anyway.
fn what(e: Error) -> String {
    match e {
        Error::Storage { problem, .. } => problem,
        other => other.to_string(),
    }
}

/// What is wrong with the file at `path` (that should be `size` bytes long), if anything.
async fn look_at(file_io: &FileIO, path: String, size: Option<u64>) -> Option<Problem> {
    let input = match file_io.new_input(&path) {
        Ok(input) => input,
        Err(e) => {
            return Some(Problem {
                file: path,
                problem: e.to_string(),
            })
        }
    };
    let problem = match input.metadata().await {
        Ok(found) if size.is_none_or(|s| s == found.size) => return None,
        Ok(found) => format!(
            "{} bytes, the table's metadata records {}",
            found.size,
            size.unwrap_or_default()
        ),
        Err(e) => what(e.into()),
    };
    Some(Problem {
        file: path,
        problem,
    })
}
