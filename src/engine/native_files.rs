//! Which files and tables DataFusion's Parquet reader reads exactly as Iceberg would, the rules
//! of the native scan for local files and files on S3 alike: Parquet without delete files to
//! apply, a plain path (nothing the object store would escape), and columns that map by name as
//! they map by field id. Local files are also checked against the size their metadata records
//! here (one `stat` each); remote ones in `remote_files.rs`.

use iceberg::scan::FileScanTask;
use iceberg::spec::{DataFileFormat, TableMetadata};

/// Whether `location` is on the local file system (a plain absolute path or a `file:` URL).
pub(super) fn local(location: &str) -> bool {
    location.starts_with('/') || location.starts_with("file:")
}

/// The path of a local file as the local object store names it, or `None` when the store
/// would have to escape a character of it (then the file is read through iceberg).
fn object_store_path(location: &str) -> Option<String> {
    let path = location
        .strip_prefix("file://")
        .or_else(|| location.strip_prefix("file:"))
        .unwrap_or(location);
    let plain = path.starts_with('/') && plain_path(&path[1..]);
    plain.then(|| path.trim_start_matches('/').to_string())
}

/// Whether the object store names `path` (relative, `/`-separated) as it is: only letters,
/// digits and `/._-=+`, and no empty, `.` or `..` segment.
pub(super) fn plain_path(path: &str) -> bool {
    path.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-=+".contains(&b))
        && path
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

/// Whether a planned task's file is a Parquet file without delete files to apply (what
/// DataFusion's Parquet reader can read as Iceberg would); otherwise why not.
pub(super) fn plain_parquet(task: &FileScanTask) -> Result<(), String> {
    let file = &task.data_file_path;
    if !task.deletes.is_empty() {
        return Err(format!("{file} has delete files to apply"));
    }
    if task.data_file_format != DataFileFormat::Parquet {
        return Err(format!("{file} is not Parquet"));
    }
    Ok(())
}

/// Whether reading the table's files by column name reads what reading by field id would:
/// every column primitive, and in every schema the table ever had, each field id with the
/// name the current schema gives it and each current name with the same id.
pub(super) fn columns_match_by_name(metadata: &TableMetadata) -> bool {
    let current = metadata.current_schema();
    let primitive = current
        .as_struct()
        .fields()
        .iter()
        .all(|f| f.field_type.is_primitive());
    primitive
        && metadata.schemas_iter().all(|schema| {
            schema.field_id_to_name_map().iter().all(|(id, name)| {
                current.name_by_field_id(*id).is_none_or(|n| n == name)
                    && current.field_id_by_name(name).is_none_or(|i| i == *id)
            })
        })
}

/// `location` (a local path or `file:` URL) as a `file:///` URL, when it is a plain path on
/// the local file system (no character the object store would have to escape).
pub fn local_url(location: &str) -> Option<String> {
    object_store_path(location).map(|p| format!("file:///{p}"))
}

/// Why DataFusion's Parquet reader, matching columns by name, cannot read `metadata`'s files
/// as Iceberg (by field id) would; `None` when it can.
pub fn read_by_name_refusal(metadata: &TableMetadata) -> Option<String> {
    (!columns_match_by_name(metadata)).then(|| {
        "its columns were renamed, or dropped and added again, since some of its files were written (or it has nested columns): those files are read by field id".to_string()
    })
}

/// The object store path (relative to the local file system's root) of a planned task's file
/// when DataFusion's Parquet reader reads it exactly as Iceberg would; otherwise why not:
/// delete files to apply, a file elsewhere than on the local file system or not Parquet, or a
/// file missing or not of the size the metadata records (one `stat`).
pub fn native_path(task: &FileScanTask) -> Result<String, String> {
    plain_parquet(task)?;
    let file = &task.data_file_path;
    let path = object_store_path(file)
        .ok_or_else(|| format!("{file} is not a plain path on the local file system"))?;
    match std::fs::metadata(format!("/{path}")) {
        Ok(m) if m.len() == task.file_size_in_bytes => Ok(path),
        Ok(m) => Err(format!(
            "{file} has {} bytes, its metadata says {}",
            m.len(),
            task.file_size_in_bytes
        )),
        Err(e) => Err(format!("{file}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_map_to_the_object_store_and_odd_ones_do_not() {
        assert_eq!(
            object_store_path("/tmp/w/t/data/m=671/a-1.parquet").as_deref(),
            Some("tmp/w/t/data/m=671/a-1.parquet")
        );
        assert_eq!(
            object_store_path("file:///tmp/w/a.parquet").as_deref(),
            Some("tmp/w/a.parquet")
        );
        assert_eq!(object_store_path("/tmp/with space/a.parquet"), None);
        assert_eq!(object_store_path("s3://bucket/a.parquet"), None);
    }
}
