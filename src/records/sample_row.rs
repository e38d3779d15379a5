//! One violating row a check kept as a sample: each column's value as the engine shows it
//! (NULL as `null`), in the table's column order. Recorded with the run and printed, as
//! `column=value, ...`, by the run summary and `pipeline run-info`.

use std::fmt;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// A sampled row. Records written before 2026-12-06 hold the row as one `column=value, ...`
/// string; they read back as [`SampleRow::Text`] and print as they did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SampleRow {
    /// Column name -> value (`None` for NULL), in column order.
    Fields(IndexMap<String, Option<String>>),
    /// A row as an older record wrote it.
    Text(String),
}

impl fmt::Display for SampleRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SampleRow::Text(text) => f.write_str(text),
            SampleRow::Fields(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(c, v)| format!("{c}={}", v.as_deref().unwrap_or("NULL")))
                    .collect();
                f.write_str(&parts.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SampleRow;

    #[test]
    fn rows_are_objects_and_old_strings_still_read() {
        let row = SampleRow::Fields(
            [
                ("id".to_string(), Some("2".to_string())),
                ("v".to_string(), None),
            ]
            .into_iter()
            .collect(),
        );
        let text = serde_json::to_string(&row).unwrap();
        assert_eq!(text, r#"{"id":"2","v":null}"#);
        assert_eq!(serde_json::from_str::<SampleRow>(&text).unwrap(), row);
        assert_eq!(row.to_string(), "id=2, v=NULL");
        let old: SampleRow = serde_json::from_str(r#""id=2, v=NULL""#).unwrap();
        assert_eq!(old, SampleRow::Text("id=2, v=NULL".into()));
        assert_eq!(old.to_string(), "id=2, v=NULL");
    }
}
