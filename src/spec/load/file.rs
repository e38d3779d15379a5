//! One spec file -> [`Pipeline`]: every section parsed, then the checks that span sections
//! (one producer per table, expectations on tables the pipeline writes, `drop` only on
//! transforms).

use std::collections::BTreeMap;
use std::path::Path;

use super::catalog::catalog_config;
use super::expect::expectation;
use super::ingest::ingest_job;
use super::position::{display_path_in, Positions};
use super::raw::RawSpec;
use super::reader::reader;
use super::schedule::schedule;
use super::transform::transform_job;
use crate::error::{Error, Result};
use crate::spec::catalog::CatalogConfig;
use crate::spec::expect::{ExpectAction, Expectation};
use crate::spec::pipeline::Pipeline;
use crate::spec::transform::TransformJob;

/// The longest `[pipeline] name`.
const MAX_NAME_CHARS: usize = 64;

/// `[pipeline] name` is the pipeline's identity (its run lock, its run records, `--pipeline`):
/// letters, digits, `_` and `-`, at most 64, so that it is safe in a file name and in a
/// command line.
fn pipeline_name(at: &Positions, name: &toml::Spanned<String>) -> Result<()> {
    let text = name.get_ref();
    let valid = !text.is_empty()
        && text.chars().count() <= MAX_NAME_CHARS
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !text.starts_with('-');
    if valid {
        return Ok(());
    }
    Err(at.error(
        name.span(),
        format!("pipeline name `{text}` is not a name: use letters, digits, `_` and `-` (at most {MAX_NAME_CHARS}), not starting with `-`"),
        Some("the name keys the pipeline's run lock and run records; e.g. name = \"retail\"".into()),
    ))
}

/// Loads a spec file; relative paths in it resolve against `project_dir`.
pub fn load_pipeline_file(project_dir: &Path, file: &Path) -> Result<Pipeline> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
    let at = Positions {
        file: display_path_in(project_dir, file),
        text: &text,
    };
    let raw: RawSpec = at.parse()?;

    pipeline_name(&at, &raw.pipeline.name)?;
    let (catalog, catalogs) = catalog_configs(&at, project_dir, &raw)?;

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

    let seen = one_producer_per_table(&at, &raw)?;
    attach_drops(&at, &raw, &expectations, &mut transforms)?;
    expectations_on_written_tables(&at, &raw, &seen)?;

    let mut readers = Vec::new();
    for r in &raw.reader {
        readers.push(reader(&at, r)?);
    }

    let max_snapshots = max_snapshots(&at, &raw)?;
    let schedule = raw
        .schedule
        .as_ref()
        .map(|s| schedule(&at, s))
        .transpose()?;
    let maintenance = raw
        .maintenance
        .as_ref()
        .map(|m| super::maintenance::maintenance(&at, m))
        .transpose()?
        .unwrap_or_default();
    let engine = raw
        .engine
        .as_ref()
        .map(|e| super::engine::engine(&at, e))
        .transpose()?
        .unwrap_or_default();
    Ok(Pipeline {
        engine,
        schedule,
        maintenance,
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
        env: None,
    })
}

/// `[catalog]` (the embedded default when absent) and every `[catalogs.NAME]`, by name.
fn catalog_configs(
    at: &Positions,
    project_dir: &Path,
    raw: &RawSpec,
) -> Result<(CatalogConfig, BTreeMap<String, CatalogConfig>)> {
    let catalog = match &raw.catalog {
        None => CatalogConfig::embedded_default(project_dir),
        Some(c) => catalog_config(at, project_dir, c)?,
    };
    let mut catalogs = BTreeMap::new();
    for (name, c) in &raw.catalogs {
        catalogs.insert(name.clone(), catalog_config(at, project_dir, c)?);
    }
    Ok((catalog, catalogs))
}

/// Each table has exactly one producer: the line of the job producing each table, keyed by
/// the table's name, or the error at the second job producing one.
fn one_producer_per_table(
    at: &Positions,
    raw: &RawSpec,
) -> Result<std::collections::HashMap<String, usize>> {
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
    Ok(seen)
}

/// Rows are dropped while a transform writes its table: each `drop` expectation joins the
/// `drops` of the transform writing its table, or is an error when no transform writes it.
fn attach_drops(
    at: &Positions,
    raw: &RawSpec,
    expectations: &[Expectation],
    transforms: &mut [TransformJob],
) -> Result<()> {
    for (e, parsed) in raw.expect.iter().zip(expectations) {
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
    Ok(())
}

/// Expectations are on tables this pipeline writes (quarantine tables included): an error at
/// the first that is not, listing the tables of `seen`.
fn expectations_on_written_tables(
    at: &Positions,
    raw: &RawSpec,
    seen: &std::collections::HashMap<String, usize>,
) -> Result<()> {
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
    Ok(())
}

/// `[retention] max_snapshots`: none when absent, else at least 2.
fn max_snapshots(at: &Positions, raw: &RawSpec) -> Result<Option<usize>> {
    Ok(match raw.retention.as_ref().and_then(|r| r.max_snapshots.as_ref()) {
        None => None,
        Some(n) if *n.get_ref() < 2 => {
            return Err(at.error(
                n.span(),
                "max_snapshots must be at least 2".into(),
                Some("it is how many snapshots of each table's history are kept, e.g. max_snapshots = 100".into()),
            ))
        }
        Some(n) => Some(*n.get_ref() as usize),
    })
}
