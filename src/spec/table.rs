//! Table names (`namespace.table`) and where a spec declares things.

use std::fmt;
use std::path::PathBuf;

use super::sql::{is_identifier, quote_ident};

/// A table name `namespace.table`, the unit of every job's output.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName {
    pub namespace: String,
    pub name: String,
}

impl TableName {
    /// Parses `ns.table`; both parts must be plain identifiers.
    pub fn parse(text: &str) -> Option<TableName> {
        let (ns, name) = text.split_once('.')?;
        (is_identifier(ns) && is_identifier(name)).then(|| TableName {
            namespace: ns.to_string(),
            name: name.to_string(),
        })
    }

    /// The quarantine table that receives this table's bad records.
    pub fn quarantine(&self) -> TableName {
        TableName {
            namespace: self.namespace.clone(),
            name: format!("{}__quarantine", self.name),
        }
    }

    /// `"namespace"."table"`, for SQL the engine writes itself.
    pub fn quoted(&self) -> String {
        format!(
            "{}.{}",
            quote_ident(&self.namespace),
            quote_ident(&self.name)
        )
    }

    /// The Iceberg identifier of this table.
    pub fn ident(&self) -> iceberg::TableIdent {
        iceberg::TableIdent::new(
            iceberg::NamespaceIdent::new(self.namespace.clone()),
            self.name.clone(),
        )
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.namespace, self.name)
    }
}

/// Where a job is declared: the spec file and the line of its `table =` key.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: usize,
}
