//! TOML -> [`Pipeline`], with positions on every error.

use std::ops::Range;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

use super::*;
use crate::error::{Error, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    pipeline: RawPipeline,
    catalog: Option<RawCatalog>,
    #[serde(default)]
    catalogs: IndexMap<String, RawCatalog>,
    #[serde(default)]
    expect: Vec<RawExpect>,
    #[serde(default)]
    reader: Vec<RawReader>,
    #[serde(default)]
    ingest: Vec<RawIngest>,
    #[serde(default)]
    transform: Vec<RawTransform>,
    retention: Option<RawRetention>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    table: Spanned<String>,
    check: Spanned<String>,
    name: Option<String>,
    column: Option<Spanned<String>>,
    columns: Option<Vec<String>>,
    values: Option<Vec<toml::Value>>,
    min: Option<Spanned<toml::Value>>,
    max: Option<Spanned<toml::Value>>,
    pattern: Option<String>,
    to: Option<Spanned<String>>,
    within: Option<Spanned<String>>,
    sql: Option<String>,
    action: Option<Spanned<String>>,
    max_change: Option<Spanned<toml::Value>>,
    runs: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReader {
    name: Spanned<String>,
    owner: Option<String>,
    kind: Option<String>,
    sql: Option<String>,
    columns: Option<Vec<Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetention {
    max_snapshots: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPipeline {
    name: Spanned<String>,
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    #[serde(rename = "type")]
    kind: Spanned<String>,
    // sql
    name: Option<String>,
    uri: Option<Spanned<String>>,
    warehouse: Option<String>,
    // s3tables
    table_bucket_arn: Option<Spanned<String>>,
    region: Option<String>,
    endpoint_url: Option<String>,
    // rest
    credential_env: Option<String>,
    token_env: Option<String>,
    oauth2_server_uri: Option<String>,
    scope: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    transactions: Option<bool>,
    // storage (s3tables and rest)
    s3_endpoint: Option<String>,
    path_style_access: Option<bool>,
    profile: Option<String>,
    access_key_id_env: Option<String>,
    secret_access_key_env: Option<Spanned<String>>,
    session_token_env: Option<String>,
    // Secrets given literally are refused with a pointer to the *_env setting.
    secret_access_key: Option<Spanned<toml::Value>>,
    access_key_id: Option<Spanned<toml::Value>>,
    session_token: Option<Spanned<toml::Value>>,
    token: Option<Spanned<toml::Value>>,
    credential: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIngest {
    table: Spanned<String>,
    format: Spanned<String>,
    path: Spanned<OneOrMany>,
    schema: Spanned<IndexMap<String, Spanned<String>>>,
    #[serde(default)]
    partition_by: Vec<Spanned<String>>,
    on_bad_record: Option<Spanned<String>>,
    schema_evolution: Option<Spanned<String>>,
    delimiter: Option<Spanned<String>>,
    quote: Option<Spanned<String>>,
    header: Option<bool>,
    null_values: Option<Vec<String>>,
    target_file_size_mb: Option<Spanned<u64>>,
    #[allow(dead_code)]
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTransform {
    table: Spanned<String>,
    sql: Spanned<String>,
    #[serde(default)]
    partition_by: Vec<Spanned<String>>,
    mode: Option<Spanned<String>>,
    incremental_by: Option<Spanned<IndexMap<String, Spanned<String>>>>,
    target_file_size_mb: Option<Spanned<u64>>,
    #[allow(dead_code)]
    description: Option<String>,
}

/// Lists the pipelines of a project (the stems of `pipelines/*.toml`), sorted.
pub fn list_pipelines(project_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(project_dir.join("pipelines"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    names
}

/// Loads `pipelines/NAME.toml` of a project and the SQL files it names.
pub fn load_pipeline(project_dir: &Path, name: &str) -> Result<Pipeline> {
    let file = project_dir.join("pipelines").join(format!("{name}.toml"));
    if !file.exists() {
        let known = list_pipelines(project_dir);
        return Err(Error::Pipeline {
            file,
            message: format!("no pipeline named `{name}`"),
            hint: Some(if known.is_empty() {
                format!(
                    "no pipelines/*.toml under {}; pass --project DIR",
                    project_dir.display()
                )
            } else {
                format!("pipelines here: {}", known.join(", "))
            }),
        });
    }
    load_pipeline_file(project_dir, &file)
}

/// Loads a spec file; relative paths in it resolve against `project_dir`.
pub fn load_pipeline_file(project_dir: &Path, file: &Path) -> Result<Pipeline> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
    let at = Positions {
        file: display_path_in(project_dir, file),
        text: &text,
    };
    let raw: RawSpec = toml::from_str(&text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        at.error(span, e.message().to_string(), None)
    })?;

    let catalog = match &raw.catalog {
        None => CatalogConfig::embedded_default(project_dir),
        Some(c) => catalog_config(&at, project_dir, c)?,
    };
    let mut catalogs = std::collections::BTreeMap::new();
    for (name, c) in &raw.catalogs {
        catalogs.insert(name.clone(), catalog_config(&at, project_dir, c)?);
    }

    let mut expectations = Vec::new();
    for raw_expect in &raw.expect {
        expectations.push(expectation(&at, raw_expect)?);
    }

    let mut ingests = Vec::new();
    for raw_job in &raw.ingest {
        ingests.push(ingest_job(&at, raw_job)?);
    }
    let mut transforms: Vec<TransformJob> = Vec::new();
    for raw_job in &raw.transform {
        transforms.push(transform_job(&at, project_dir, raw_job)?);
    }

    // Each table has exactly one producer.
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    let outputs = raw
        .ingest
        .iter()
        .map(|j| &j.table)
        .chain(raw.transform.iter().map(|j| &j.table));
    for table in outputs {
        let line = at.line_col(table.span().start).0;
        if let Some(first) = seen.insert(table.get_ref().clone(), line) {
            return Err(at.error(
                table.span(),
                format!(
                    "table `{}` is already produced by the job at line {first}",
                    table.get_ref()
                ),
                Some("every table has exactly one producing job".into()),
            ));
        }
    }

    // Rows are dropped while a transform writes its table.
    for (e, parsed) in raw.expect.iter().zip(&expectations) {
        if parsed.action != ExpectAction::Drop {
            continue;
        }
        let job = transforms.iter_mut().find(|t| t.table == parsed.table);
        if let Some(job) = job {
            job.drops.push(parsed.clone());
        } else {
            return Err(at.error(
                e.table.span(),
                format!(
                    "action \"drop\" applies to tables a transform writes; `{}` is not one",
                    parsed.table
                ),
                Some("in bronze, bad records go to quarantine by on_bad_record = \"quarantine\"; drop rows in the silver transform that reads it".into()),
            ));
        }
    }

    // Expectations are on tables this pipeline writes (quarantine tables included).
    for e in &raw.expect {
        let name = e.table.get_ref();
        let base = name.strip_suffix("__quarantine").unwrap_or(name);
        if !seen.contains_key(name) && !seen.contains_key(base) {
            return Err(at.error(
                e.table.span(),
                format!("expectation on `{name}`, which this pipeline does not write"),
                Some(format!(
                    "tables it writes: {}",
                    seen.keys().cloned().collect::<Vec<_>>().join(", ")
                )),
            ));
        }
    }

    let mut readers = Vec::new();
    for r in &raw.reader {
        readers.push(reader(&at, r)?);
    }

    let max_snapshots = match raw.retention.as_ref().and_then(|r| r.max_snapshots.as_ref()) {
        None => None,
        Some(n) if *n.get_ref() < 2 => {
            return Err(at.error(
                n.span(),
                "max_snapshots must be at least 2".into(),
                Some("it is how many snapshots of each table's history are kept, e.g. max_snapshots = 100".into()),
            ))
        }
        Some(n) => Some(*n.get_ref() as usize),
    };
    Ok(Pipeline {
        max_snapshots,
        name: raw.pipeline.name.get_ref().clone(),
        description: raw.pipeline.description.clone(),
        file: file.to_path_buf(),
        project_dir: project_dir.to_path_buf(),
        catalog,
        catalogs,
        expectations,
        readers,
        ingests,
        transforms,
    })
}

/// One `[catalog]` or `[catalogs.NAME]` table.
fn catalog_config(at: &Positions, project_dir: &Path, c: &RawCatalog) -> Result<CatalogConfig> {
    for (secret, key) in [
        (&c.secret_access_key, "secret_access_key"),
        (&c.access_key_id, "access_key_id"),
        (&c.session_token, "session_token"),
        (&c.token, "token"),
        (&c.credential, "credential"),
    ] {
        if let Some(value) = secret {
            return Err(at.error(
                value.span(),
                format!("`{key}` must not be written in the spec file"),
                Some(format!(
                    "put it in an environment variable and name that variable with `{key}_env = \"VAR\"`, or leave it out to use the standard AWS credential chain"
                )),
            ));
        }
    }
    let storage = S3Storage {
        endpoint: c.s3_endpoint.clone(),
        region: c.region.clone(),
        path_style_access: c.path_style_access.unwrap_or(false),
        profile: c.profile.clone(),
        access_key_id_env: c.access_key_id_env.clone(),
        secret_access_key_env: c
            .secret_access_key_env
            .as_ref()
            .map(|s| s.get_ref().clone()),
        session_token_env: c.session_token_env.clone(),
    };
    if storage.access_key_id_env.is_some() != storage.secret_access_key_env.is_some() {
        return Err(at.error(
            c.kind.span(),
            "access_key_id_env and secret_access_key_env must be given together".into(),
            Some("or leave both out to use the standard AWS credential chain".into()),
        ));
    }
    let unsupported = |field: &str, kind: &str| {
        at.error(
            c.kind.span(),
            format!("`{field}` does not apply to a catalog of type \"{kind}\""),
            None,
        )
    };
    Ok(match c.kind.get_ref().as_str() {
        "sql" => {
            let database = match &c.uri {
                None => project_dir.join("warehouse/catalog.db"),
                Some(uri) => {
                    let u = uri.get_ref();
                    let path = u
                        .strip_prefix("sqlite://")
                        .or_else(|| u.strip_prefix("sqlite:"))
                        .ok_or_else(|| {
                            at.error(
                                uri.span(),
                                format!("unsupported catalog uri `{u}`"),
                                Some("the embedded catalog takes sqlite://PATH, e.g. sqlite://warehouse/catalog.db".into()),
                            )
                        })?;
                    let path = path.split('?').next().unwrap_or(path);
                    project_dir.join(path)
                }
            };
            CatalogConfig::Sql {
                name: c.name.clone().unwrap_or_else(|| "default".into()),
                database,
                warehouse: project_dir.join(c.warehouse.as_deref().unwrap_or("warehouse")),
            }
        }
        "s3tables" => {
            let Some(arn) = &c.table_bucket_arn else {
                return Err(at.error(
                    c.kind.span(),
                    "an s3tables catalog needs `table_bucket_arn`".into(),
                    Some("e.g. table_bucket_arn = \"arn:aws:s3tables:us-east-1:111122223333:bucket/analytics\"".into()),
                ));
            };
            let parts: Vec<&str> = arn.get_ref().split(':').collect();
            if parts.len() != 6 || parts[2] != "s3tables" || !parts[5].starts_with("bucket/") {
                return Err(at.error(
                    arn.span(),
                    format!("`{}` is not a table bucket ARN", arn.get_ref()),
                    Some("expected arn:aws:s3tables:REGION:ACCOUNT:bucket/NAME".into()),
                ));
            }
            if c.uri.is_some() {
                return Err(unsupported("uri", "s3tables"));
            }
            let region = c.region.clone().unwrap_or_else(|| parts[3].to_string());
            CatalogConfig::S3Tables(S3TablesConfig {
                table_bucket_arn: arn.get_ref().clone(),
                region: region.clone(),
                endpoint_url: c.endpoint_url.clone(),
                storage: S3Storage {
                    region: Some(region),
                    ..storage
                },
            })
        }
        "rest" => {
            let Some(uri) = &c.uri else {
                return Err(at.error(
                    c.kind.span(),
                    "a rest catalog needs `uri`".into(),
                    Some("e.g. uri = \"https://catalog.example.com/api/catalog\"".into()),
                ));
            };
            if c.table_bucket_arn.is_some() {
                return Err(unsupported("table_bucket_arn", "rest"));
            }
            CatalogConfig::Rest(RestConfig {
                uri: uri.get_ref().trim_end_matches('/').to_string(),
                warehouse: c.warehouse.clone(),
                credential_env: c.credential_env.clone(),
                token_env: c.token_env.clone(),
                oauth2_server_uri: c.oauth2_server_uri.clone(),
                scope: c.scope.clone(),
                headers: c.headers.clone(),
                transactions: c.transactions.unwrap_or(true),
                storage,
            })
        }
        other => {
            return Err(at.error(
                c.kind.span(),
                format!("unknown catalog type `{other}`"),
                Some("supported: \"sql\" (embedded SQLite catalog + local warehouse), \"s3tables\" (AWS S3 Tables), \"rest\" (any Iceberg REST catalog)".into()),
            ))
        }
    })
}

fn table_name(at: &Positions, raw: &Spanned<String>) -> Result<TableName> {
    TableName::parse(raw.get_ref()).ok_or_else(|| {
        at.error(
            raw.span(),
            format!("invalid table name `{}`", raw.get_ref()),
            Some("write namespace.table, e.g. \"bronze.raw_orders\" (letters, digits, _)".into()),
        )
    })
}

fn partition_fields(at: &Positions, raw: &[Spanned<String>]) -> Result<Vec<PartitionField>> {
    raw.iter()
        .map(|p| PartitionField::parse(p.get_ref()).map_err(|m| at.error(p.span(), m, None)))
        .collect()
}

fn target_size(raw: &Option<Spanned<u64>>, at: &Positions) -> Result<usize> {
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

fn single_byte(
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

fn ingest_job(at: &Positions, raw: &RawIngest) -> Result<IngestJob> {
    let table = table_name(at, &raw.table)?;
    let format = match raw.format.get_ref().as_str() {
        "csv" => Format::Csv,
        "json" | "jsonl" | "ndjson" => Format::Json,
        other => {
            return Err(at.error(
                raw.format.span(),
                format!("unknown format `{other}`"),
                Some("format is \"csv\" or \"json\" (newline-delimited)".into()),
            ))
        }
    };
    let paths = match raw.path.get_ref() {
        OneOrMany::One(p) => vec![p.clone()],
        OneOrMany::Many(ps) => ps.clone(),
    };
    if paths.is_empty() {
        return Err(at.error(raw.path.span(), "path lists no files".into(), None));
    }
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
    let partition_by = partition_fields(at, &raw.partition_by)?;
    for (field, raw_field) in partition_by.iter().zip(&raw.partition_by) {
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
    let on_bad_record = match raw
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
    };
    let schema_evolution = match raw.schema_evolution.as_ref() {
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
    };
    Ok(IngestJob {
        table,
        format,
        paths,
        columns,
        partition_by,
        on_bad_record,
        schema_evolution,
        csv: CsvOptions {
            delimiter: single_byte(at, &raw.delimiter, b',', "delimiter")?,
            quote: single_byte(at, &raw.quote, b'"', "quote")?,
            header: raw.header.unwrap_or(true),
        },
        null_values: raw
            .null_values
            .clone()
            .unwrap_or_else(|| vec![String::new()]),
        target_file_size: target_size(&raw.target_file_size_mb, at)?,
        origin: at.origin(raw.table.span()),
    })
}

fn transform_job(at: &Positions, project_dir: &Path, raw: &RawTransform) -> Result<TransformJob> {
    let table = table_name(at, &raw.table)?;
    let sql_file = project_dir.join(raw.sql.get_ref());
    let sql = std::fs::read_to_string(&sql_file).map_err(|e| {
        at.error(
            raw.sql.span(),
            format!("cannot read SQL file `{}`: {}", raw.sql.get_ref(), io_reason(&e)),
            Some("the path is relative to the project directory, e.g. \"sql/retail/silver_orders.sql\"".into()),
        )
    })?;
    let partition_by = partition_fields(at, &raw.partition_by)?;
    let mode = match raw.mode.as_ref().map(|m| (m, m.get_ref().as_str())) {
        None | Some((_, "full_refresh")) => TransformMode::FullRefresh,
        Some((m, "replace_partitions")) => {
            let time_fields = partition_by
                .iter()
                .filter(|p| crate::commit::Grain::of(p.transform).is_some())
                .count();
            if time_fields != 1 {
                return Err(at.error(
                    m.span(),
                    format!(
                        "mode \"replace_partitions\" needs exactly one time partition field; \
                         {} has {time_fields}",
                        raw.table.get_ref()
                    ),
                    Some(
                        "add one year(c), month(c), day(c) or hour(c) to partition_by, \
                         e.g. partition_by = [\"month(order_date)\"]"
                            .into(),
                    ),
                ));
            }
            TransformMode::ReplacePartitions
        }
        Some((m, other)) => {
            return Err(at.error(
                m.span(),
                format!("unknown transform mode `{other}`"),
                Some("mode is \"full_refresh\" (default) or \"replace_partitions\"".into()),
            ))
        }
    };
    let mut incremental_by = Vec::new();
    for (input, column) in raw.incremental_by.iter().flat_map(|m| m.get_ref()) {
        let table = TableName::parse(input).ok_or_else(|| {
            at.error(
                column.span(),
                format!("incremental_by: `{input}` is not a table name"),
                Some("map each input table to its time column, e.g. \"bronze.orders\" = \"order_ts\"".into()),
            )
        })?;
        if !is_identifier(column.get_ref()) {
            return Err(at.error(
                column.span(),
                format!(
                    "incremental_by: `{}` is not a column name",
                    column.get_ref()
                ),
                None,
            ));
        }
        incremental_by.push(RangeInput {
            table,
            column: column.get_ref().clone(),
            line: at.line_col(column.span().start).0,
        });
    }
    Ok(TransformJob {
        table,
        sql_file: display_path_in(project_dir, &sql_file),
        sql,
        partition_by,
        mode,
        incremental_by,
        target_file_size: target_size(&raw.target_file_size_mb, at)?,
        origin: at.origin(raw.table.span()),
        drops: Vec::new(),
    })
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        _ => e.to_string(),
    }
}

/// `path` relative to the project directory when it is inside it, for short messages.
pub fn display_path_in(project_dir: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(project_dir)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Turns byte spans of the spec text into `file:line:col` errors.
struct Positions<'a> {
    file: PathBuf,
    text: &'a str,
}

impl Positions<'_> {
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    fn error(&self, span: Range<usize>, message: String, hint: Option<String>) -> Error {
        let (line, col) = self.line_col(span.start);
        Error::Spec {
            file: self.file.clone(),
            line,
            col,
            message,
            hint,
        }
    }

    fn origin(&self, span: Range<usize>) -> Origin {
        Origin {
            file: self.file.clone(),
            line: self.line_col(span.start).0,
        }
    }
}

/// A TOML value as a SQL literal.
fn sql_literal(value: &toml::Value) -> Option<String> {
    Some(match value {
        toml::Value::String(s) => format!("'{}'", s.replace('\'', "''")),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string().to_uppercase(),
        toml::Value::Datetime(d) => format!("'{d}'"),
        _ => return None,
    })
}

/// One `[[reader]]` table.
fn reader(at: &Positions, raw: &RawReader) -> Result<Reader> {
    let uses = match (&raw.sql, &raw.columns) {
        (Some(sql), None) => ReaderUses::Sql(sql.clone()),
        (None, Some(columns)) if !columns.is_empty() => {
            for c in columns {
                if crate::lineage::ColumnRef::parse(c.get_ref()).is_none() {
                    return Err(at.error(
                        c.span(),
                        format!("`{}` is not namespace.table.column", c.get_ref()),
                        Some("e.g. columns = [\"silver.customers.customer_tier\"]".into()),
                    ));
                }
            }
            ReaderUses::Columns(columns.iter().map(|c| c.get_ref().clone()).collect())
        }
        _ => {
            return Err(at.error(
                raw.name.span(),
                format!(
                    "reader `{}` needs either `sql` (the query it runs) or `columns` (the namespace.table.column it reads)",
                    raw.name.get_ref()
                ),
                None,
            ))
        }
    };
    Ok(Reader {
        name: raw.name.get_ref().clone(),
        owner: raw.owner.clone(),
        kind: raw.kind.clone(),
        uses,
        origin: at.origin(raw.name.span()),
    })
}

/// One `[[expect]]` table.
fn expectation(at: &Positions, raw: &RawExpect) -> Result<Expectation> {
    let table = table_name(at, &raw.table)?;
    let kind = raw.check.get_ref().as_str();
    let need_column = || -> Result<String> {
        raw.column
            .as_ref()
            .map(|c| c.get_ref().clone())
            .ok_or_else(|| {
                at.error(
                    raw.check.span(),
                    format!("check `{kind}` needs `column`"),
                    None,
                )
            })
    };
    let literal = |v: &Option<Spanned<toml::Value>>| -> Result<Option<String>> {
        v.as_ref()
            .map(|v| {
                sql_literal(v.get_ref()).ok_or_else(|| {
                    at.error(v.span(), "expected a number, string or date".into(), None)
                })
            })
            .transpose()
    };
    let check = match kind {
        "not_null" => Check::NotNull {
            column: need_column()?,
        },
        "unique" => Check::Unique {
            columns: match (&raw.columns, &raw.column) {
                (Some(cols), _) if !cols.is_empty() => cols.clone(),
                (_, Some(c)) => vec![c.get_ref().clone()],
                _ => {
                    return Err(at.error(
                        raw.check.span(),
                        "check `unique` needs `column` or `columns`".into(),
                        None,
                    ))
                }
            },
        },
        "accepted_values" => {
            let values = raw.values.as_ref().filter(|v| !v.is_empty()).ok_or_else(|| {
                at.error(
                    raw.check.span(),
                    "check `accepted_values` needs `values = [...]`".into(),
                    None,
                )
            })?;
            Check::AcceptedValues {
                column: need_column()?,
                values: values
                    .iter()
                    .map(|v| {
                        sql_literal(v).ok_or_else(|| {
                            at.error(raw.check.span(), "values must be numbers, strings or dates".into(), None)
                        })
                    })
                    .collect::<Result<_>>()?,
            }
        }
        "range" => {
            let (min, max) = (literal(&raw.min)?, literal(&raw.max)?);
            if min.is_none() && max.is_none() {
                return Err(at.error(raw.check.span(), "check `range` needs `min`, `max` or both".into(), None));
            }
            Check::Range {
                column: need_column()?,
                min,
                max,
            }
        }
        "regex" => Check::Regex {
            column: need_column()?,
            pattern: raw.pattern.clone().ok_or_else(|| {
                at.error(raw.check.span(), "check `regex` needs `pattern`".into(), None)
            })?,
        },
        "relationships" => {
            let to = raw.to.as_ref().ok_or_else(|| {
                at.error(
                    raw.check.span(),
                    "check `relationships` needs `to = \"namespace.table.column\"`".into(),
                    None,
                )
            })?;
            let parts: Vec<&str> = to.get_ref().split('.').collect();
            let [ns, t, c] = parts.as_slice() else {
                return Err(at.error(
                    to.span(),
                    format!("`{}` is not namespace.table.column", to.get_ref()),
                    None,
                ));
            };
            Check::Relationships {
                column: need_column()?,
                to_table: TableName {
                    namespace: ns.to_string(),
                    name: t.to_string(),
                },
                to_column: c.to_string(),
            }
        }
        "volume" | "null_rate" => {
            let max_change = raw.max_change.as_ref().ok_or_else(|| {
                at.error(
                    raw.check.span(),
                    format!("check `{kind}` needs `max_change`, e.g. \"50%\""),
                    None,
                )
            })?;
            let max_change = parse_fraction(max_change.get_ref()).ok_or_else(|| {
                at.error(
                    max_change.span(),
                    "expected a percentage such as \"50%\" or a fraction such as 0.5".into(),
                    None,
                )
            })?;
            let runs = match &raw.runs {
                None => 5,
                Some(r) if *r.get_ref() == 0 => {
                    return Err(at.error(r.span(), "runs must be at least 1".into(), None))
                }
                Some(r) => *r.get_ref() as usize,
            };
            if kind == "volume" {
                Check::Volume { max_change, runs }
            } else {
                Check::NullRate {
                    column: need_column()?,
                    max_change,
                    runs,
                }
            }
        }
        "row_count" => {
            let bound = |v: &Option<Spanned<toml::Value>>| -> Result<Option<u64>> {
                v.as_ref()
                    .map(|v| match v.get_ref() {
                        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
                        _ => Err(at.error(v.span(), "expected a row count (a whole number)".into(), None)),
                    })
                    .transpose()
            };
            let (min, max) = (bound(&raw.min)?, bound(&raw.max)?);
            if min.is_none() && max.is_none() {
                return Err(at.error(raw.check.span(), "check `row_count` needs `min`, `max` or both".into(), None));
            }
            Check::RowCount { min, max }
        }
        "freshness" => {
            let within = raw.within.as_ref().ok_or_else(|| {
                at.error(raw.check.span(), "check `freshness` needs `within`, e.g. \"36h\"".into(), None)
            })?;
            Check::Freshness {
                column: need_column()?,
                within_micros: parse_duration_micros(within.get_ref()).ok_or_else(|| {
                    at.error(
                        within.span(),
                        format!("`{}` is not a duration", within.get_ref()),
                        Some("write a number and a unit: 45s, 90m, 36h, 2d".into()),
                    )
                })?,
            }
        }
        "sql" => Check::Sql {
            sql: raw.sql.clone().ok_or_else(|| {
                at.error(
                    raw.check.span(),
                    "check `sql` needs `sql = \"SELECT ... (the violating rows)\"`".into(),
                    None,
                )
            })?,
        },
        other => {
            return Err(at.error(
                raw.check.span(),
                format!("unknown check `{other}`"),
                Some("checks: not_null, unique, accepted_values, range, regex, relationships, row_count, freshness, sql, volume, null_rate".into()),
            ))
        }
    };
    let action = match raw.action.as_ref().map(|a| a.get_ref().as_str()) {
        None | Some("fail") => ExpectAction::Fail,
        Some("warn") => ExpectAction::Warn,
        Some("drop") if check.is_row_level() => ExpectAction::Drop,
        Some("drop") => {
            let span = raw.action.as_ref().map(|a| a.span()).unwrap_or_default();
            return Err(at.error(
                span,
                format!("action \"drop\" needs a check that judges each row on its own; `{}` does not", check.kind()),
                Some("drop works with not_null, accepted_values, range, regex and relationships; use \"fail\" or \"warn\" here".into()),
            ));
        }
        Some(other) => {
            let span = raw.action.as_ref().map(|a| a.span()).unwrap_or_default();
            return Err(at.error(
                span,
                format!("unknown action `{other}`"),
                Some("actions: \"fail\" (publish nothing), \"warn\" (publish and report) or \"drop\" (violating rows go to <table>__quarantine)".into()),
            ));
        }
    };
    Ok(Expectation {
        name: raw.name.clone().unwrap_or_else(|| check.default_name()),
        table,
        check,
        action,
        origin: at.origin(raw.check.span()),
    })
}
