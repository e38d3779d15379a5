//! One stream of query results written into a table (and, with `drop` expectations, its
//! quarantine table): the loop every writer of a transform runs, on this machine or on a
//! cluster's executor.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use iceberg::io::FileIO;
use iceberg::spec::DataFile;
use serde::{Deserialize, Serialize};

use super::tagged::split_tagged;
use super::{FileLayout, TableWriter};
use crate::error::{Error, Result};

/// What writers wrote: the table's files, the quarantine table's, rows dropped per
/// expectation.
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<DataFile>,
    pub quarantine_files: Vec<DataFile>,
    pub dropped: BTreeMap<String, u64>,
}

impl Written {
    /// Adds what another writer wrote.
    pub fn absorb(&mut self, other: Written) {
        self.files.extend(other.files);
        self.quarantine_files.extend(other.quarantine_files);
        for (name, n) in other.dropped {
            *self.dropped.entry(name).or_default() += n;
        }
    }
}

/// Where a transform's rows go: its table's next version and, with `drop` expectations, its
/// quarantine table's (then the rows carry the drop tag as their last column).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Destination {
    pub table: String,
    /// How the staged table's files are laid out (schema with field ids, partition spec,
    /// data folder).
    pub layout: FileLayout,
    pub quarantine: Option<(String, FileLayout)>,
    /// Files roll at this size.
    pub target_file_size: usize,
}

/// Writes every batch of `stream` into `destination` (violating rows, stamped with `run_id`,
/// into its quarantine table) through `file_io`, in files named from `prefix`; counts rows
/// into `progress` and closes the files. A failure of the query itself becomes
/// `query_error`'s error; nothing is committed either way.
pub async fn drain(
    mut stream: SendableRecordBatchStream,
    destination: &Destination,
    file_io: &FileIO,
    prefix: &str,
    run_id: &str,
    progress: &AtomicU64,
    query_error: impl Fn(DataFusionError) -> Error,
) -> Result<Written> {
    let d = destination;
    let size = d.target_file_size;
    let mut writer =
        TableWriter::with_layout(&d.table, &d.layout, file_io.clone(), size, prefix).await?;
    let mut quarantine = match &d.quarantine {
        Some((table, layout)) => {
            Some(TableWriter::with_layout(table, layout, file_io.clone(), size, prefix).await?)
        }
        None => None,
    };
    let mut dropped = BTreeMap::new();
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(&query_error)?;
        progress.fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
        match quarantine.as_mut() {
            None => writer.write(batch).await?,
            Some(q_writer) => {
                let (kept, rejected) = split_tagged(&batch, run_id, &mut dropped)?;
                writer.write(kept).await?;
                if let Some(rejected) = rejected {
                    q_writer.write(rejected).await?;
                }
            }
        }
    }
    let quarantine_files = match quarantine {
        Some(q) => q.close().await?,
        None => Vec::new(),
    };
    Ok(Written {
        files: writer.close().await?,
        quarantine_files,
        dropped,
    })
}
