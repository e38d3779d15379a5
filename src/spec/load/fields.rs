//! Values several sections share: table names, partition expressions, file sizes, single
//! characters, SQL literals.

use toml::Spanned;

use super::position::Positions;
use crate::error::Result;
use crate::spec::partition::PartitionField;
use crate::spec::pipeline::DEFAULT_TARGET_FILE_SIZE;
use crate::spec::table::TableName;

pub(super) fn table_name(at: &Positions, raw: &Spanned<String>) -> Result<TableName> {
    TableName::parse(raw.get_ref()).ok_or_else(|| {
        at.error(
            raw.span(),
            format!("invalid table name `{}`", raw.get_ref()),
            Some("write namespace.table, e.g. \"bronze.raw_orders\" (letters, digits, _)".into()),
        )
    })
}

pub(super) fn partition_fields(
    at: &Positions,
    raw: &[Spanned<String>],
) -> Result<Vec<PartitionField>> {
    raw.iter()
        .map(|p| PartitionField::parse(p.get_ref()).map_err(|m| at.error(p.span(), m, None)))
        .collect()
}

pub(super) fn target_size(raw: &Option<Spanned<u64>>, at: &Positions) -> Result<usize> {
    match raw {
        None => Ok(DEFAULT_TARGET_FILE_SIZE),
        Some(mb) if *mb.get_ref() == 0 => Err(at.error(
            mb.span(),
            "target_file_size_mb must be at least 1".into(),
            None,
        )),
        Some(mb) => Ok(*mb.get_ref() as usize * 1024 * 1024),
    }
}

pub(super) fn single_byte(
    at: &Positions,
    raw: &Option<Spanned<String>>,
    default: u8,
    what: &str,
) -> Result<u8> {
    match raw {
        None => Ok(default),
        Some(s) => match s.get_ref().as_bytes() {
            [b] => Ok(*b),
            b"\\t" => Ok(b'\t'),
            _ => Err(at.error(
                s.span(),
                format!("{what} must be one ASCII character, got `{}`", s.get_ref()),
                None,
            )),
        },
    }
}

pub(super) fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        _ => e.to_string(),
    }
}

/// A TOML value as a SQL literal.
pub(super) fn sql_literal(value: &toml::Value) -> Option<String> {
    Some(match value {
        toml::Value::String(s) => format!("'{}'", s.replace('\'', "''")),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string().to_uppercase(),
        toml::Value::Datetime(d) => format!("'{d}'"),
        _ => return None,
    })
}

/// `erase = { subject_column = "this_tables_column" }` of an ingest or transform.
pub(super) fn erase_columns(
    raw: &Option<Spanned<indexmap::IndexMap<String, Spanned<String>>>>,
    at: &Positions,
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    for (subject, column) in raw.iter().flat_map(|m| m.get_ref()) {
        for name in [subject, column.get_ref()] {
            if !crate::spec::sql::is_identifier(name) {
                return Err(at.error(
                    column.span(),
                    format!("erase: `{name}` is not a column name"),
                    Some("map the subject column of `pipeline erase --where` to this table's column, e.g. erase = { customer_id = \"buyer_id\" }".into()),
                ));
            }
        }
        out.insert(subject.clone(), column.get_ref().clone());
    }
    Ok(out)
}

/// `description` and `columns` (column name = text) of a job: the table's words.
pub(super) fn table_docs(
    at: &Positions,
    description: &Option<Spanned<String>>,
    columns: &Option<Spanned<indexmap::IndexMap<String, Spanned<String>>>>,
) -> Result<crate::spec::TableDocs> {
    let words = |text: &Spanned<String>, what: &str| {
        let trimmed = text.get_ref().trim();
        if trimmed.is_empty() {
            return Err(at.error(
                text.span(),
                format!("{what}: empty; say what it holds, or leave the key out"),
                None,
            ));
        }
        Ok(trimmed.to_string())
    };
    let description = match description {
        Some(d) => Some(words(d, "description")?),
        None => None,
    };
    let mut docs = Vec::new();
    for (column, text) in columns.iter().flat_map(|m| m.get_ref()) {
        let (line, col) = at.line_col(text.span().start);
        docs.push(crate::spec::ColumnDoc {
            column: column.clone(),
            text: words(text, &format!("columns.{column}"))?,
            line,
            col,
        });
    }
    Ok(crate::spec::TableDocs {
        description,
        columns: docs,
        file: at.file.clone(),
    })
}
