//! The receipt of `pipeline erase`, kept in its run record: the condition, per table the rows
//! removed and the files rewritten, the landing files the rows came from, what was recomputed
//! downstream and what could not be searched. It never holds an erased value beyond the
//! condition itself.

use serde::{Deserialize, Serialize};

/// One table an erase searched, planned or done.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErasedTable {
    pub table: String,
    /// The condition as applied to this table: its columns renamed where the table holds the
    /// subject under another name (by column lineage or the spec's `erase` key).
    pub condition: String,
    pub rows: u64,
    pub files_rewritten: u64,
    /// Live data files of the table before the erase.
    pub files_in_table: u64,
    pub bytes_rewritten: u64,
    /// Partitions of the files rewritten (none for an unpartitioned table).
    #[serde(default)]
    pub partitions: Vec<String>,
}

/// One landing file that held erased records.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErasedSource {
    /// As the ingest matched it, relative to the project.
    pub path: String,
    /// Records of the subject in it (loaded or quarantined).
    pub records: u64,
    /// Rewritten without them (`--rewrite-sources`); otherwise the file still holds them.
    pub rewritten: bool,
}

/// What an erase did, beside the table snapshots its run record lists.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct EraseReceipt {
    /// The `--where` condition, as given.
    pub condition: String,
    pub tables: Vec<ErasedTable>,
    pub sources: Vec<ErasedSource>,
    /// Tables without the subject's columns recomputed in the same publish because they are
    /// computed from erased tables (monthly totals, say).
    #[serde(default)]
    pub recomputed: Vec<String>,
    /// What was not searched, and why.
    #[serde(default)]
    pub not_searched: Vec<String>,
    /// Whether old snapshots still hold the rows, and until when.
    pub history: String,
}
