//! What changed in a table between two of its snapshots: the data files live in one and not the
//! other. Manifests both snapshots share (same path) are skipped unread, so the cost follows the
//! change, not the table.

use std::collections::HashMap;

use iceberg::io::FileIO;
use iceberg::spec::{DataFile, Datum, PrimitiveLiteral, PrimitiveType, TableMetadata};

use super::manifests::manifest_list;
use crate::error::Result;

/// Files added or removed between snapshot `from` and snapshot `to` (`None`: an empty table) of
/// `metadata`. `Ok(None)` when `from` is no longer in the metadata (expired).
pub async fn changed_files(
    file_io: &FileIO,
    metadata: &TableMetadata,
    from: Option<i64>,
    to: Option<i64>,
) -> Result<Option<Vec<DataFile>>> {
    let manifests = |id: Option<i64>| async move {
        let Some(id) = id else {
            return Ok::<_, crate::error::Error>(Some(Vec::new()));
        };
        let Some(snapshot) = metadata.snapshot_by_id(id) else {
            return Ok(None);
        };
        let list = manifest_list(file_io, metadata, snapshot).await?;
        Ok(Some(list.entries().to_vec()))
    };
    let (Some(old), Some(new)) = (manifests(from).await?, manifests(to).await?) else {
        return Ok(None);
    };
    let old_paths: std::collections::HashSet<_> =
        old.iter().map(|m| m.manifest_path.clone()).collect();
    let new_paths: std::collections::HashSet<_> =
        new.iter().map(|m| m.manifest_path.clone()).collect();
    let live = |list: Vec<iceberg::spec::ManifestFile>, skip: std::collections::HashSet<String>| async move {
        let mut files: HashMap<String, DataFile> = HashMap::new();
        for m in list
            .into_iter()
            .filter(|m| !skip.contains(&m.manifest_path))
        {
            if !m.has_added_files() && !m.has_existing_files() {
                continue;
            }
            let manifest = m.load_manifest(file_io).await?;
            for e in manifest.entries().iter().filter(|e| e.is_alive()) {
                files.insert(e.file_path().to_string(), e.data_file().clone());
            }
        }
        Ok::<_, crate::error::Error>(files)
    };
    let removed = live(old, new_paths).await?;
    let added = live(new, old_paths).await?;
    let mut changed: Vec<DataFile> = added
        .iter()
        .filter(|(p, _)| !removed.contains_key(*p))
        .map(|(_, f)| f.clone())
        .collect();
    changed.extend(
        removed
            .into_iter()
            .filter(|(p, _)| !added.contains_key(p))
            .map(|(_, f)| f),
    );
    Ok(Some(changed))
}

/// A date or timestamp bound as microseconds since the epoch (dates at midnight UTC).
pub fn datum_micros(datum: &Datum) -> Option<i64> {
    match (datum.data_type(), datum.literal()) {
        (PrimitiveType::Date, PrimitiveLiteral::Int(days)) => Some(*days as i64 * 86_400_000_000),
        (PrimitiveType::Timestamp | PrimitiveType::Timestamptz, PrimitiveLiteral::Long(us)) => {
            Some(*us)
        }
        (PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs, PrimitiveLiteral::Long(ns)) => {
            Some(ns.div_euclid(1000))
        }
        _ => None,
    }
}

/// What a data file's column statistics say about one date/timestamp column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileTimes {
    /// Every non-NULL value is within `[min, max]` (microseconds since the epoch).
    Within(i64, i64),
    /// Every value is NULL.
    AllNull,
    /// The file has no usable bounds for the column.
    Unknown,
}

/// The instants of a file's column (by field id), from its column bounds.
pub fn file_times(file: &DataFile, field_id: i32) -> FileTimes {
    let bound = |m: &HashMap<i32, Datum>| m.get(&field_id).and_then(datum_micros);
    match (bound(file.lower_bounds()), bound(file.upper_bounds())) {
        (Some(lo), Some(hi)) => FileTimes::Within(lo, hi),
        _ if file.null_value_counts().get(&field_id) == Some(&file.record_count()) => {
            FileTimes::AllNull
        }
        _ => FileTimes::Unknown,
    }
}
