//! What a table and its columns are, in words: a job's `description` and its `columns` table
//! (`[transform.columns]`, `[ingest.columns]`: column name = text). They are written where every
//! engine reads them, the table property `comment` and each field's Iceberg `doc`, so Athena,
//! Glue, Trino, Spark and PyIceberg show them as `describe`, the docs site and MCP do.

use std::path::PathBuf;

use crate::error::{Error, Result};

use super::table::TableName;

/// The table property every engine shows as a table's description.
pub const COMMENT_PROPERTY: &str = "comment";

/// The words of one table (empty when the spec gives none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableDocs {
    /// The table's description: its `comment` property.
    pub description: Option<String>,
    /// Column descriptions, in spec order: each field's `doc`.
    pub columns: Vec<ColumnDoc>,
    /// The spec file they were given in, for messages.
    pub file: PathBuf,
}

/// One column's description and where the spec gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDoc {
    pub column: String,
    pub text: String,
    pub line: usize,
    pub col: usize,
}

impl TableDocs {
    /// The description of `column`, if the spec gives one.
    pub fn of_column(&self, column: &str) -> Option<&str> {
        self.columns
            .iter()
            .find(|d| d.column == column)
            .map(|d| d.text.as_str())
    }

    /// Refuses a description of a column `table` does not have (a typo would otherwise
    /// describe nothing), naming the spec line and the columns it has.
    pub fn check_columns<'a>(
        &self,
        table: &TableName,
        columns: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Result<()> {
        for doc in &self.columns {
            if !columns.clone().into_iter().any(|c| c == doc.column) {
                let has: Vec<&str> = columns.into_iter().collect();
                return Err(Error::Spec {
                    file: self.file.clone(),
                    line: doc.line,
                    col: doc.col,
                    message: format!("columns: `{}` describes no column of {table}", doc.column),
                    hint: Some(format!("its columns: {}", has.join(", "))),
                });
            }
        }
        Ok(())
    }
}
