//! Bronze schema evolution: columns that source files have and the spec does not declare.
//!
//! Under `schema_evolution = "add_columns"` each such column is added to the bronze table as
//! an optional string column (a new field id; rows loaded before read NULL). A column once
//! added stays: later runs load it from the files that have it, whatever the policy, so a
//! bronze table never loses a column.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use iceberg::spec::TableMetadata;
use serde::de::IgnoredAny;

use super::lineage_column_names;
use crate::error::{Error, Result};
use crate::spec::{ColumnSpec, ColumnType, Format, IngestJob};

/// `job` with the columns earlier runs added to its live table (after the declared ones).
pub fn with_added_columns(job: &IngestJob, live: Option<&TableMetadata>) -> IngestJob {
    let mut job = job.clone();
    let Some(live) = live else {
        return job;
    };
    for field in live.current_schema().as_struct().fields() {
        let known = job.columns.iter().any(|c| c.name == field.name)
            || lineage_column_names().contains(&field.name.as_str());
        if known {
            continue;
        }
        if let Some(ty) = ColumnType::from_iceberg(&field.field_type) {
            job.columns.push(ColumnSpec {
                name: field.name.clone(),
                ty,
                required: false,
                added: true,
            });
        }
    }
    job
}

/// Adds to `job` (as string columns) every column of `files` it does not have, in the order
/// first seen; returns their names.
pub fn add_new_columns(job: &mut IngestJob, files: &[PathBuf]) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for path in files {
        for name in file_columns(job, path)? {
            let known = job.columns.iter().any(|c| c.name == name) || found.contains(&name);
            if !known && !lineage_column_names().contains(&name.as_str()) {
                found.push(name);
            }
        }
    }
    for name in &found {
        job.columns.push(ColumnSpec {
            name: name.clone(),
            ty: ColumnType::String,
            required: false,
            added: true,
        });
    }
    Ok(found)
}

/// The column names a source file has: its CSV header, or every key of its JSON objects.
fn file_columns(job: &IngestJob, path: &Path) -> Result<Vec<String>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    match job.format {
        Format::Csv => {
            let mut csv = csv::ReaderBuilder::new()
                .has_headers(false)
                .delimiter(job.csv.delimiter)
                .quote(job.csv.quote)
                .from_reader(reader);
            // Read like the loader reads it: bytes, lossy UTF-8.
            let mut record = csv::ByteRecord::new();
            let has = csv.read_byte_record(&mut record).unwrap_or(false);
            Ok(if has {
                header_names(&csv::StringRecord::from_byte_record_lossy(record))
                    .into_iter()
                    .filter(|h| !h.is_empty())
                    .collect()
            } else {
                Vec::new()
            })
        }
        Format::Json => {
            let mut names = Vec::new();
            let mut seen = BTreeSet::new();
            let mut line = String::new();
            loop {
                line.clear();
                let n = reader
                    .read_line(&mut line)
                    .map_err(|e| Error::io(path, e))?;
                if n == 0 {
                    break;
                }
                // Keys borrowed from the line when they have no escapes (the common case);
                // lines that are not objects are the loader's to report.
                let mut keys: Vec<String> =
                    match serde_json::from_str::<HashMap<&str, IgnoredAny>>(&line) {
                        Ok(object) => object
                            .into_keys()
                            .filter(|k| !seen.contains(*k))
                            .map(str::to_string)
                            .collect(),
                        Err(_) => {
                            match serde_json::from_str::<HashMap<String, IgnoredAny>>(&line) {
                                Ok(object) => {
                                    object.into_keys().filter(|k| !seen.contains(k)).collect()
                                }
                                Err(_) => continue,
                            }
                        }
                    };
                keys.sort();
                for k in keys {
                    seen.insert(k.clone());
                    names.push(k);
                }
            }
            Ok(names)
        }
    }
}

/// A CSV header's column names, trimmed, without a byte-order mark.
pub fn header_names(record: &csv::StringRecord) -> Vec<String> {
    record
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let f = if i == 0 {
                f.trim_start_matches('\u{feff}')
            } else {
                f
            };
            f.trim().to_string()
        })
        .collect()
}

/// The error for columns a file has and the schema does not, under `schema_evolution = "fail"`.
pub fn undeclared_error(job: &IngestJob, path: &Path, line: u64, columns: &[&str]) -> Error {
    let names = columns
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Error::Input {
        path: path.to_path_buf(),
        message: format!(
            "line {line}: column {names} is not in the schema of {} (declared at {}:{}). Declare it in `schema`, or set schema_evolution = \"add_columns\" to add it to the table as a string column, or \"ignore\" to leave it out",
            job.table,
            job.origin.file.display(),
            job.origin.line
        ),
    }
}

/// The error for a source column named like a lineage column (`_source_file`, ...).
pub fn reserved_error(path: &Path, line: u64, name: &str) -> Error {
    Error::Input {
        path: path.to_path_buf(),
        message: format!(
            "line {line}: column `{name}` has the name of a lineage column every bronze table gets; rename it in the source"
        ),
    }
}
