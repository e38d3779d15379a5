//! The fields of quarantined raw lines, read as the ingest job reads its source files: CSV
//! fields by the header of the file the line came from (or, without a header, in declared
//! order), JSON Lines values by key. `pipeline erase` uses them to find a subject's lines in
//! an ingest's quarantine table, whose rows are text that did not fit the schema.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::evolve::header_names;
use crate::spec::{Format, IngestJob};

/// Reads fields out of an ingest job's raw lines; caches each source file's header.
pub struct RawFields<'a> {
    job: &'a IngestJob,
    project_dir: PathBuf,
    /// Header of each source file (by its path as recorded), or why it cannot be had.
    headers: HashMap<String, Result<Vec<String>, String>>,
}

impl<'a> RawFields<'a> {
    pub fn new(job: &'a IngestJob, project_dir: &Path) -> RawFields<'a> {
        RawFields {
            job,
            project_dir: project_dir.to_path_buf(),
            headers: HashMap::new(),
        }
    }

    /// The text of field `column` in `raw`, a line of `source_file` (as recorded, relative to
    /// the project): `Ok(None)` when the line has no such field or it is NULL; `Err` (why)
    /// when the line cannot be read for it (a CSV file whose header is no longer at hand).
    pub fn field(
        &mut self,
        source_file: &str,
        raw: &str,
        column: &str,
    ) -> Result<Option<String>, String> {
        match self.job.format {
            Format::Json => json_field(raw, column),
            Format::Csv => {
                let position = if self.job.csv.header {
                    let header = self.header(source_file)?;
                    header.iter().position(|h| h == column)
                } else {
                    self.job
                        .columns
                        .iter()
                        .filter(|c| !c.added)
                        .position(|c| c.name == column)
                };
                let Some(position) = position else {
                    return Ok(None);
                };
                let mut reader = csv::ReaderBuilder::new()
                    .has_headers(false)
                    .flexible(true)
                    .delimiter(self.job.csv.delimiter)
                    .quote(self.job.csv.quote)
                    .from_reader(raw.as_bytes());
                let mut record = csv::StringRecord::new();
                match reader.read_record(&mut record) {
                    Ok(true) => Ok(record
                        .get(position)
                        .map(|f| f.trim_end_matches('\r').to_string())
                        .filter(|f| !self.job.null_values.iter().any(|n| n == f))),
                    Ok(false) => Ok(None),
                    // Not even CSV: no field can be told apart from another.
                    Err(_) => Err("the line is not a CSV record".into()),
                }
            }
        }
    }

    fn header(&mut self, source_file: &str) -> Result<&Vec<String>, String> {
        let path = self.project_dir.join(source_file);
        let (delimiter, quote) = (self.job.csv.delimiter, self.job.csv.quote);
        self.headers
            .entry(source_file.to_string())
            .or_insert_with(|| {
                let file = std::fs::File::open(&path).map_err(|e| {
                    format!("{source_file} (its header names the fields) cannot be read: {e}")
                })?;
                let mut reader = csv::ReaderBuilder::new()
                    .has_headers(false)
                    .flexible(true)
                    .delimiter(delimiter)
                    .quote(quote)
                    .from_reader(file);
                let mut record = csv::StringRecord::new();
                loop {
                    match reader.read_record(&mut record) {
                        Ok(true) if record.iter().all(|f| f.trim().is_empty()) => continue,
                        Ok(true) => return Ok(header_names(&record)),
                        Ok(false) => return Err(format!("{source_file} is empty now")),
                        Err(e) => return Err(format!("{source_file}: {e}")),
                    }
                }
            })
            .as_ref()
            .map_err(|e| e.clone())
    }
}

/// The value of `key` in a JSON object line, as text (strings as they are, other values as
/// their JSON); `None` when the object lacks the key or holds null; `Err` when the line is no
/// JSON object (cut short, broken), so that no field of it can be read.
fn json_field(raw: &str, key: &str) -> Result<Option<String>, String> {
    let raw = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let value: serde_json::Value = match serde_json::from_str(raw) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        _ => return Err("the line is not a JSON object (cut short or broken)".into()),
    };
    Ok(match value.get(key) {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::json_field;

    #[test]
    fn json_fields_are_text_and_missing_or_null_or_broken_is_none() {
        let line = r#"{"customer_id": 5, "email": "a@b", "n": null}"#;
        assert_eq!(
            json_field(line, "customer_id").unwrap().as_deref(),
            Some("5")
        );
        assert_eq!(json_field(line, "email").unwrap().as_deref(), Some("a@b"));
        assert_eq!(json_field(line, "n"), Ok(None));
        assert_eq!(json_field(line, "other"), Ok(None));
        assert!(json_field("{broken", "customer_id").is_err());
        assert!(json_field(r#"{"customer_id": 4, "name": "Jo"#, "customer_id").is_err());
    }
}
