//! `[[ingest]]`: source files into a bronze table.

use super::fields::{
    erase_columns, partition_fields, single_byte, table_docs, table_name, target_size,
};
use super::position::Positions;
use super::raw::{OneOrMany, RawIngest};
use crate::error::Result;
use crate::spec::column_type::{ColumnType, TYPE_NAMES};
use crate::spec::ingest::{
    BadRecordPolicy, ColumnSpec, CsvOptions, Format, IngestJob, SchemaEvolution,
};
use crate::spec::partition::PartitionField;
use crate::spec::sql::is_identifier;

/// `delimiter`, `quote` and `header`: one byte each, apart from each other and from a line
/// end (a CSV with them equal, or split at `\n` inside its lines, cannot be read).
fn csv_options(at: &Positions, raw: &RawIngest) -> Result<CsvOptions> {
    let delimiter = single_byte(at, &raw.delimiter, b',', "delimiter")?;
    let quote = single_byte(at, &raw.quote, b'"', "quote")?;
    let span = |r: &Option<toml::Spanned<String>>| r.as_ref().map(|s| s.span()).unwrap_or(0..0);
    for (byte, what, raw_value) in [
        (delimiter, "delimiter", &raw.delimiter),
        (quote, "quote", &raw.quote),
    ] {
        if byte == b'\n' || byte == b'\r' {
            return Err(at.error(
                span(raw_value),
                format!("{what} cannot be a line end"),
                Some("lines end records; a delimiter is e.g. \",\", \";\" or \"\\t\"".into()),
            ));
        }
    }
    if delimiter == quote {
        let where_ = raw.delimiter.as_ref().or(raw.quote.as_ref());
        return Err(at.error(
            where_.map(|s| s.span()).unwrap_or(0..0),
            format!("delimiter and quote are both `{}`", delimiter as char),
            Some("the quote encloses fields that hold the delimiter: they must differ".into()),
        ));
    }
    Ok(CsvOptions {
        delimiter,
        quote,
        header: raw.header.unwrap_or(true),
    })
}

/// One `[[ingest]]` table.
pub(super) fn ingest_job(at: &Positions, raw: &RawIngest) -> Result<IngestJob> {
    let table = table_name(at, &raw.table)?;
    let format = format(at, raw)?;
    let paths = source_paths(at, raw)?;
    let columns = schema_columns(at, raw)?;
    let partition_by = partition_by(at, raw, &columns)?;
    let on_bad_record = on_bad_record(at, raw)?;
    let schema_evolution = schema_evolution(at, raw, format)?;
    let docs = table_docs(at, &raw.description, &raw.columns)?;
    let names = columns.iter().map(|c| c.name.as_str());
    docs.check_columns(&table, names.chain(crate::spec::LINEAGE_COLUMNS))?;
    Ok(IngestJob {
        table,
        format,
        paths,
        columns,
        partition_by,
        on_bad_record,
        schema_evolution,
        csv: csv_options(at, raw)?,
        null_values: raw
            .null_values
            .clone()
            .unwrap_or_else(|| vec![String::new()]),
        target_file_size: target_size(&raw.target_file_size_mb, at)?,
        origin: at.origin(raw.table.span()),
        erase: erase_columns(&raw.erase, at)?,
        docs,
    })
}

/// `format`: `csv`, or newline-delimited `json` (also spelled `jsonl` or `ndjson`).
fn format(at: &Positions, raw: &RawIngest) -> Result<Format> {
    Ok(match raw.format.get_ref().as_str() {
        "csv" => Format::Csv,
        "json" | "jsonl" | "ndjson" => Format::Json,
        other => {
            return Err(at.error(
                raw.format.span(),
                format!("unknown format `{other}`"),
                Some("format is \"csv\" or \"json\" (newline-delimited)".into()),
            ))
        }
    })
}

/// `path`: one path or a list of them, at least one.
fn source_paths(at: &Positions, raw: &RawIngest) -> Result<Vec<String>> {
    let paths = match raw.path.get_ref() {
        OneOrMany::One(p) => vec![p.clone()],
        OneOrMany::Many(ps) => ps.clone(),
    };
    if paths.is_empty() {
        return Err(at.error(raw.path.span(), "path lists no files".into(), None));
    }
    Ok(paths)
}

/// `[ingest.schema]`: at least one column, each a valid name with a known type, `not null`
/// making it required; in the order written.
fn schema_columns(at: &Positions, raw: &RawIngest) -> Result<Vec<ColumnSpec>> {
    let mut columns = Vec::new();
    for (name, ty) in raw.schema.get_ref() {
        if !is_identifier(name) || name.starts_with('_') {
            return Err(at.error(
                ty.span(),
                format!("invalid column name `{name}`"),
                Some("column names are letters, digits and _, not starting with _ (reserved for lineage columns)".into()),
            ));
        }
        let text = ty.get_ref().trim();
        let (type_text, required) = match text.to_ascii_lowercase().strip_suffix("not null") {
            Some(t) => (t.trim().to_string(), true),
            None => (text.to_string(), false),
        };
        let ty_parsed = ColumnType::parse(&type_text).ok_or_else(|| {
            at.error(
                ty.span(),
                format!("unknown type `{text}` for column `{name}`"),
                Some(format!(
                    "types: {TYPE_NAMES}; append `not null` to reject NULLs"
                )),
            )
        })?;
        columns.push(ColumnSpec {
            name: name.clone(),
            ty: ty_parsed,
            required,
            added: false,
        });
    }
    if columns.is_empty() {
        return Err(at.error(raw.schema.span(), "schema declares no columns".into(), None));
    }
    Ok(columns)
}

/// `partition_by`: each field on a column of the schema, with a transform its type takes.
fn partition_by(
    at: &Positions,
    raw: &RawIngest,
    columns: &[ColumnSpec],
) -> Result<Vec<PartitionField>> {
    let partition_by = partition_fields(at, &raw.partition_by)?;
    for (field, raw_field) in partition_by.iter().zip(&raw.partition_by) {
        if let Some(column) = columns.iter().find(|c| c.name == field.source) {
            field
                .check_type(&column.ty.iceberg_type())
                .map_err(|m| at.error(raw_field.span(), m, None))?;
        }
        if !columns.iter().any(|c| c.name == field.source) {
            return Err(at.error(
                raw_field.span(),
                format!("partition column `{}` is not in the schema", field.source),
                Some(format!(
                    "columns: {}",
                    columns
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            ));
        }
    }
    Ok(partition_by)
}

/// `on_bad_record`: `fail` (the default) or `quarantine`.
fn on_bad_record(at: &Positions, raw: &RawIngest) -> Result<BadRecordPolicy> {
    Ok(
        match raw
            .on_bad_record
            .as_ref()
            .map(|s| (s, s.get_ref().as_str()))
        {
            None => BadRecordPolicy::Fail,
            Some((_, "fail")) => BadRecordPolicy::Fail,
            Some((_, "quarantine")) => BadRecordPolicy::Quarantine,
            Some((s, other)) => {
                return Err(at.error(
                    s.span(),
                    format!("unknown on_bad_record policy `{other}`"),
                    Some("on_bad_record is \"fail\" (default) or \"quarantine\"".into()),
                ))
            }
        },
    )
}

/// `schema_evolution`: `fail` (the default), `add_columns` (not for CSV files without a
/// header) or `ignore`.
fn schema_evolution(at: &Positions, raw: &RawIngest, format: Format) -> Result<SchemaEvolution> {
    Ok(match raw.schema_evolution.as_ref() {
        None => SchemaEvolution::Fail,
        Some(s) => match s.get_ref().as_str() {
            "fail" => SchemaEvolution::Fail,
            "add_columns" if !raw.header.unwrap_or(true) && format == Format::Csv => {
                return Err(at.error(
                    s.span(),
                    "schema_evolution = \"add_columns\" needs CSV files with a header (header = false gives columns no names)".into(),
                    None,
                ))
            }
            "add_columns" => SchemaEvolution::AddColumns,
            "ignore" => SchemaEvolution::Ignore,
            other => {
                return Err(at.error(
                    s.span(),
                    format!("unknown schema_evolution policy `{other}`"),
                    Some("schema_evolution is \"fail\" (default: a column the schema does not declare stops the run), \"add_columns\" (add it to the table as a string column) or \"ignore\" (do not load it)".into()),
                ))
            }
        },
    })
}
