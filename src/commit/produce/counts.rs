//! The rows, files and bytes a snapshot adds or deletes, and the table totals they leave: the
//! previous snapshot's totals plus what was added, minus what was deleted (never below zero).

use iceberg::spec::{DataFile, SnapshotRef};

use crate::commit::summary;

/// Rows, files and bytes of a set of data files.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FileCounts {
    pub rows: u64,
    pub files: u64,
    pub bytes: u64,
}

impl FileCounts {
    /// The counts of `files`.
    pub fn of(files: &[DataFile]) -> FileCounts {
        FileCounts {
            rows: files.iter().map(|f| f.record_count()).sum::<u64>(),
            files: files.len() as u64,
            bytes: files.iter().map(|f| f.file_size_in_bytes()).sum::<u64>(),
        }
    }

    /// Counts one more file.
    pub fn add(&mut self, file: &DataFile) {
        self.rows += file.record_count();
        self.files += 1;
        self.bytes += file.file_size_in_bytes();
    }
}

/// The `total-*` summary properties of a snapshot that adds `added` and deletes `deleted` on top
/// of `previous`; the delete-file totals are always 0.
pub(super) fn totals(
    previous: Option<&SnapshotRef>,
    added: &FileCounts,
    deleted: &FileCounts,
) -> [(&'static str, u64); 6] {
    let after = |key: &str, added: u64, deleted: u64| {
        let before = summary::total(previous, key) + added;
        before - deleted.min(before)
    };
    [
        (
            summary::TOTAL_RECORDS,
            after(summary::TOTAL_RECORDS, added.rows, deleted.rows),
        ),
        (
            summary::TOTAL_DATA_FILES,
            after(summary::TOTAL_DATA_FILES, added.files, deleted.files),
        ),
        (
            summary::TOTAL_FILES_SIZE,
            after(summary::TOTAL_FILES_SIZE, added.bytes, deleted.bytes),
        ),
        (summary::TOTAL_DELETE_FILES, 0),
        (summary::TOTAL_POSITION_DELETES, 0),
        (summary::TOTAL_EQUALITY_DELETES, 0),
    ]
}
