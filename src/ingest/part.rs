//! A source file to read, whole or from a line on: how a JSON Lines load goes on from the
//! record where it met a key the table lacks (`schema_evolution = "add_columns"`).

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::PathBuf;

use crate::error::{Error, Result};

/// Where reading a source file starts: a byte offset at the start of a line, and how many
/// lines lie before it (so line numbers stay those of the whole file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Start {
    pub offset: u64,
    pub lines_before: u64,
}

/// One source file of a job (its index in the job's file list) and where to start reading it.
#[derive(Debug, Clone)]
pub struct Part {
    pub index: usize,
    pub path: PathBuf,
    pub start: Start,
}

impl Part {
    /// Every file of `files`, whole.
    pub fn whole(files: &[PathBuf]) -> Vec<Part> {
        files
            .iter()
            .enumerate()
            .map(|(index, path)| Part {
                index,
                path: path.clone(),
                start: Start::default(),
            })
            .collect()
    }

    /// A buffered reader of the part, positioned at its start.
    pub fn open(&self) -> Result<BufReader<File>> {
        let mut file = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        if self.start.offset > 0 {
            file.seek(SeekFrom::Start(self.start.offset))
                .map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(BufReader::with_capacity(1 << 20, file))
    }
}
