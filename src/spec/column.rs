//! Columns of catalog tables, named `namespace.table.column`.

use std::fmt;

use super::table::TableName;

/// A column of a catalog table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ColumnRef {
    pub table: TableName,
    pub column: String,
}

impl ColumnRef {
    pub fn new(table: &TableName, column: &str) -> ColumnRef {
        ColumnRef {
            table: table.clone(),
            column: column.to_string(),
        }
    }

    /// Parses `namespace.table.column`.
    pub fn parse(text: &str) -> Option<ColumnRef> {
        let (table, column) = text.rsplit_once('.')?;
        let table = TableName::parse(table)?;
        (!column.is_empty()).then(|| ColumnRef::new(&table, column))
    }
}

impl fmt::Display for ColumnRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.table, self.column)
    }
}
