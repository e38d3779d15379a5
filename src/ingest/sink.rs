//! Where decoded records go: good rows into bronze batches, bad records into quarantine
//! batches or, under the `fail` policy, into an error that stops the run.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use tokio::sync::mpsc;

use super::batch::{BatchAssembler, QuarantineAssembler, BATCH_ROWS};
use super::values::Parsed;
use crate::error::{Error, Result};
use crate::spec::BadRecordPolicy;

/// A batch on its way to a writer.
pub enum Message {
    Rows(RecordBatch),
    Quarantine(RecordBatch),
}

/// Counts for one source file. `good + bad = records` always holds.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FileStats {
    pub file: String,
    pub records: u64,
    pub good: u64,
    pub bad: u64,
    pub bytes: u64,
}

/// Receives decoded records of one job, file after file.
pub struct RecordSink {
    rows: BatchAssembler,
    quarantine: QuarantineAssembler,
    policy: BadRecordPolicy,
    tx: mpsc::Sender<Message>,
    progress: Arc<AtomicU64>,
    /// Counts of the current file.
    pub stats: FileStats,
}

impl RecordSink {
    pub fn new(
        rows: BatchAssembler,
        quarantine: QuarantineAssembler,
        policy: BadRecordPolicy,
        tx: mpsc::Sender<Message>,
        progress: Arc<AtomicU64>,
    ) -> RecordSink {
        RecordSink {
            rows,
            quarantine,
            policy,
            tx,
            progress,
            stats: FileStats::default(),
        }
    }

    /// Starts a new source file; returns the counts of the previous one.
    pub fn start_file(&mut self, display: &str, bytes: u64) -> FileStats {
        self.rows.set_file(display);
        std::mem::replace(
            &mut self.stats,
            FileStats {
                file: display.to_string(),
                bytes,
                ..Default::default()
            },
        )
    }

    /// A record that parsed against the schema.
    pub fn good<'a>(
        &mut self,
        values: &[Parsed],
        line: u64,
        text: impl Fn(usize) -> &'a str,
    ) -> Result<()> {
        self.stats.records += 1;
        self.stats.good += 1;
        self.rows.push(values, line, text);
        if self.rows.len() >= BATCH_ROWS {
            let batch = self.rows.finish()?;
            self.progress
                .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
            self.send(Message::Rows(batch))?;
        }
        Ok(())
    }

    /// A record that did not parse. Under `fail` this is the run's error.
    pub fn bad(
        &mut self,
        path: &Path,
        line: u64,
        raw: &str,
        reason: String,
        column: Option<&str>,
    ) -> Result<()> {
        self.stats.records += 1;
        self.stats.bad += 1;
        match self.policy {
            BadRecordPolicy::Fail => Err(Error::BadRecord {
                file: path.to_path_buf(),
                line,
                reason: format!(
                    "{reason}\n  hint: fix the source, or set on_bad_record = \"quarantine\" to load the good records and keep the bad ones in a quarantine table"
                ),
            }),
            BadRecordPolicy::Quarantine => {
                self.quarantine
                    .push(&self.stats.file, line, raw, &reason, column);
                if self.quarantine.len() >= BATCH_ROWS {
                    let batch = self.quarantine.finish()?;
                    self.send(Message::Quarantine(batch))?;
                }
                Ok(())
            }
        }
    }

    /// Sends every pending row and bad record.
    pub fn flush(&mut self) -> Result<()> {
        if !self.rows.is_empty() {
            let batch = self.rows.finish()?;
            self.progress
                .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
            self.send(Message::Rows(batch))?;
        }
        if !self.quarantine.is_empty() {
            let batch = self.quarantine.finish()?;
            self.send(Message::Quarantine(batch))?;
        }
        Ok(())
    }

    fn send(&self, message: Message) -> Result<()> {
        self.tx
            .blocking_send(message)
            .map_err(|_| Error::WriterStopped)
    }
}
