//! A transform's SQL admitted by the SQL gate (exactly one `SELECT`, nested within the limits,
//! reading only catalog tables), and the catalog tables it reads: its dependencies, from
//! DataFusion's parser, never hand-written.

use crate::engine::{admit, Admitted, Entry};
use crate::error::{Error, Result};
use crate::spec::{TableName, TransformJob};

/// A transform's SQL, admitted as one SELECT, with the tables it reads.
#[derive(Debug, Clone)]
pub struct ParsedTransform {
    pub admitted: Admitted,
    pub inputs: Vec<TableName>,
}

/// Admits a transform's SQL through the SQL gate. Errors name the SQL file and, where the
/// parser knows it, the line.
pub fn parse_transform(job: &TransformJob) -> Result<ParsedTransform> {
    let admitted = admit(&job.sql, Entry::Transform).map_err(|r| Error::Sql {
        file: job.sql_file.clone(),
        line: r.line,
        message: r.message,
    })?;
    Ok(ParsedTransform {
        inputs: admitted.tables().to_vec(),
        admitted,
    })
}
