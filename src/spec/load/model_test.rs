//! `[[test]]` sections of a pipeline's spec file and of `tests/<pipeline>/*.toml` ->
//! [`ModelTest`]s: rows inline (a TOML array of tables) or in a CSV file with a header; errors
//! name the file, line and what is wrong.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::position::{display_path_in, Positions};
use crate::error::{Error, Result};
use crate::spec::model_test::{ModelTest, TestRows};
use crate::spec::table::TableName;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTestFile {
    #[serde(default)]
    test: Vec<RawTest>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTest {
    name: Option<String>,
    table: Spanned<String>,
    #[serde(default)]
    given: BTreeMap<Spanned<String>, Spanned<RawRows>>,
    expect: Spanned<RawRows>,
    existing: Option<Spanned<RawRows>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawRows {
    Inline(Vec<BTreeMap<String, toml::Value>>),
    Csv { csv: String },
}

/// The `[[test]]` sections of a spec file (its other sections are the spec loader's).
#[derive(Deserialize)]
struct SpecTests {
    #[serde(default)]
    test: Vec<RawTest>,
}

/// The model tests of pipeline `pipeline` (spec file `spec_file`): the `[[test]]` sections of
/// the spec file, then every `[[test]]` of `tests/<pipeline>/*.toml` under `project_dir`,
/// files in name order.
pub fn load_model_tests(
    project_dir: &Path,
    pipeline: &str,
    spec_file: &Path,
) -> Result<Vec<ModelTest>> {
    let mut tests = spec_tests(project_dir, spec_file)?;
    let dir = project_dir.join("tests").join(pipeline);
    if !dir.is_dir() {
        return Ok(tests);
    }
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for file in files {
        tests.extend(test_file(project_dir, &file)?);
    }
    Ok(tests)
}

/// The `[[test]]` sections of the spec file.
fn spec_tests(project_dir: &Path, file: &Path) -> Result<Vec<ModelTest>> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
    let at = Positions {
        file: display_path_in(project_dir, file),
        text: &text,
    };
    let raw: SpecTests = at.parse()?;
    raw.test
        .iter()
        .map(|t| model_test(&at, project_dir, t))
        .collect()
}

/// The tests of one file.
fn test_file(project_dir: &Path, file: &Path) -> Result<Vec<ModelTest>> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
    let at = Positions {
        file: display_path_in(project_dir, file),
        text: &text,
    };
    let raw: RawTestFile = at.parse()?;
    raw.test
        .iter()
        .map(|t| model_test(&at, project_dir, t))
        .collect()
}

fn model_test(at: &Positions, project_dir: &Path, raw: &RawTest) -> Result<ModelTest> {
    let table = name(at, &raw.table)?;
    let mut given = Vec::new();
    for (input, rows) in &raw.given {
        given.push((name(at, input)?, rows_of(at, project_dir, rows)?));
    }
    Ok(ModelTest {
        name: raw
            .name
            .clone()
            .unwrap_or_else(|| format!("test at line {}", at.line_col(raw.table.span().start).0)),
        table,
        given,
        expect: rows_of(at, project_dir, &raw.expect)?,
        existing: raw
            .existing
            .as_ref()
            .map(|rows| rows_of(at, project_dir, rows))
            .transpose()?,
        origin: at.origin(raw.table.span()),
    })
}

fn name(at: &Positions, text: &Spanned<String>) -> Result<TableName> {
    TableName::parse(text.get_ref()).ok_or_else(|| {
        at.error(
            text.span(),
            format!("`{}` is not a table name", text.get_ref()),
            Some("write namespace.table, e.g. \"silver.orders\"".into()),
        )
    })
}

/// Rows inline or from a CSV file (relative to the project).
fn rows_of(at: &Positions, project_dir: &Path, raw: &Spanned<RawRows>) -> Result<TestRows> {
    let origin = at.origin(raw.span());
    match raw.get_ref() {
        RawRows::Inline(rows) => Ok(TestRows {
            rows: rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|(k, v)| (k.clone(), Some(text_of(v))))
                        .collect()
                })
                .collect(),
            origin,
        }),
        RawRows::Csv { csv } => csv_rows(project_dir, csv)
            .map_err(|message| at.error(raw.span(), format!("csv = \"{csv}\": {message}"), None)),
    }
}

/// A TOML value as the text a column is parsed from.
fn text_of(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The rows of a CSV file with a header; an empty field is NULL.
fn csv_rows(project_dir: &Path, path: &str) -> std::result::Result<TestRows, String> {
    let full = project_dir.join(path);
    let mut reader = csv::Reader::from_path(&full).map_err(|e| e.to_string())?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| e.to_string())?
        .iter()
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| e.to_string())?;
        let row = header
            .iter()
            .zip(record.iter())
            .map(|(k, v)| (k.clone(), (!v.is_empty()).then(|| v.to_string())))
            .collect();
        rows.push(row);
    }
    Ok(TestRows {
        rows,
        origin: crate::spec::table::Origin {
            file: path.into(),
            line: 1,
        },
    })
}
