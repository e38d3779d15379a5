//! Newline-delimited JSON decoding: one object per line, blank lines skipped. Values are read
//! from their raw JSON text, so decimals stay exact.

use std::borrow::Cow;
use std::fmt;
use std::io::BufRead;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::evolve::{reserved_error, undeclared_error};
use super::part::{Part, Start};
use super::sink::RecordSink;
use super::values::NUL_IN_TEXT;
use super::values::{parse_date, parse_decimal, parse_integer, parse_timestamp, Parsed};
use crate::error::{Error, Result};
use crate::spec::{ColumnSpec, ColumnType, IngestJob, SchemaEvolution, LINEAGE_COLUMNS};

/// Reads one JSON Lines file (from `part`'s start) into the sink. With `stop_at_new_keys`
/// (`schema_evolution = "add_columns"`), stops before the first record that parses as an
/// object with a key the job has no column for (lineage names aside) and returns where that
/// record starts: every record before it was read whole, none from it on.
pub fn read_json(
    job: &IngestJob,
    part: &Part,
    stop_at_new_keys: bool,
    sink: &mut RecordSink,
) -> Result<Option<Start>> {
    let path = part.path.as_path();
    let mut reader = part.open()?;
    let mut buf = Vec::new();
    let mut line_no = part.start.lines_before;
    let mut offset = part.start.offset;
    let n = job.columns.len();
    let mut values = vec![Parsed::Null; n];
    let mut strings: Vec<String> = vec![String::new(); n];
    let mut fields = Fields::new(n);
    let mut ignored = std::collections::BTreeSet::new();
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if read == 0 {
            break;
        }
        let line_start = Start {
            offset,
            lines_before: line_no,
        };
        offset += read as u64;
        line_no += 1;
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = match std::str::from_utf8(&buf) {
            // A byte-order mark opens the file, not its first record.
            Ok(t) if line_no == 1 => t.strip_prefix('\u{feff}').unwrap_or(t),
            Ok(t) => t,
            Err(_) => {
                let raw = String::from_utf8_lossy(&buf).into_owned();
                sink.bad(path, line_no, &raw, "invalid UTF-8".into(), None)?;
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        match decode(job, text, &mut fields, &mut values, &mut strings) {
            Ok(()) if fields.unknown.is_empty() => {
                sink.good(&values, line_no, |i| strings[i].as_str())?
            }
            Ok(()) | Err(_) if stop_at_new_keys && fields.has_new_key() => {
                return Ok(Some(line_start));
            }
            Ok(()) => {
                let unknown = std::mem::take(&mut fields.unknown);
                ignored.extend(keys_to_ignore(job, path, line_no, unknown)?);
                sink.good(&values, line_no, |i| strings[i].as_str())?
            }
            Err((reason, column)) => sink.bad(path, line_no, text, reason, column)?,
        }
    }
    if !ignored.is_empty() {
        tracing::warn!(
            file = %path.display(),
            "keys not in the schema of {} are not loaded (schema_evolution = \"ignore\"): {}",
            job.table,
            ignored.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(None)
}

/// The keys of record `line` the job has no column for, when they may be left out
/// (`schema_evolution = "ignore"`); else the error they are (a lineage column's name is one
/// under any policy).
fn keys_to_ignore(
    job: &IngestJob,
    path: &std::path::Path,
    line: u64,
    unknown: Vec<String>,
) -> Result<Vec<String>> {
    if let Some(reserved) = unknown
        .iter()
        .find(|k| LINEAGE_COLUMNS.contains(&k.as_str()))
    {
        return Err(reserved_error(path, line, reserved));
    }
    if job.schema_evolution != SchemaEvolution::Ignore {
        let names: Vec<&str> = unknown.iter().map(String::as_str).collect();
        return Err(undeclared_error(job, path, line, &names));
    }
    Ok(unknown)
}

/// Decodes one JSON object into `values`; leaves in `fields.unknown` (sorted) the keys the
/// job has no column for. A record that is not valid JSON fails before any of its values
/// is looked at; then a duplicated key; then the first bad value in column order.
fn decode<'j>(
    job: &'j IngestJob,
    text: &str,
    fields: &mut Fields,
    values: &mut [Parsed],
    strings: &mut [String],
) -> Result<(), (String, Option<&'j str>)> {
    fields.read(&job.columns, text).map_err(|e| {
        let what = if e.is_eof() {
            "truncated JSON".to_string()
        } else {
            format!("invalid JSON object: {e}")
        };
        (what.replace(" at line 1 ", " at "), None)
    })?;
    // A key given twice is ambiguous (which value was meant?): the record is bad.
    if let Some(key) = fields.duplicate.take() {
        return Err((format!("duplicate key `{key}`"), None));
    }
    for (i, col) in job.columns.iter().enumerate() {
        let fail = |r: String| (format!("column {}: {r}", col.name), Some(col.name.as_str()));
        let raw = match fields.slots[i] {
            // JSON's whitespace is ASCII: outside a string no other kind can border a value.
            Some((start, len)) => text
                .get(start..start + len)
                .ok_or_else(|| fail("value out of its record".into()))?
                .trim_ascii(),
            None => "null",
        };
        values[i] = if raw == "null" {
            if col.required {
                return Err(fail("NULL in a `not null` column".into()));
            }
            Parsed::Null
        } else {
            json_value(col.ty, raw, &mut strings[i], col.added).map_err(fail)?
        };
    }
    fields.unknown.sort();
    Ok(())
}

/// One JSON value as `ty`. `any_value`: a string column that takes non-string values as
/// their JSON text (columns added by schema evolution).
fn json_value(
    ty: ColumnType,
    raw: &str,
    string_out: &mut String,
    any_value: bool,
) -> Result<Parsed, String> {
    let is_string = raw.starts_with('"');
    match ty {
        ColumnType::String if any_value && !is_string => {
            string_out.clear();
            string_out.push_str(raw);
            Ok(Parsed::Str)
        }
        ColumnType::String => {
            if !is_string {
                let kind = json_kind(raw);
                return Err(format!("expected a JSON string, found {kind} `{raw}`"));
            }
            let text = json_text(raw)?;
            string_out.clear();
            string_out.push_str(&text);
            if string_out.contains('\0') {
                return Err(NUL_IN_TEXT.into());
            }
            Ok(Parsed::Str)
        }
        ColumnType::Timestamp | ColumnType::TimestampTz | ColumnType::Date => {
            json_date_time(ty, raw)
        }
        ColumnType::Boolean => match raw {
            "true" => Ok(Parsed::Bool(true)),
            "false" => Ok(Parsed::Bool(false)),
            _ => Err(format!(
                "expected a JSON boolean, found {} `{raw}`",
                json_kind(raw)
            )),
        },
        ColumnType::Int | ColumnType::Long => json_integer(ty, raw),
        ColumnType::Float | ColumnType::Double => json_float(ty, raw),
        ColumnType::Decimal { precision, scale } => json_decimal(raw, precision, scale),
    }
}

/// What kind of JSON value `raw` is, for messages ("a string", "an object", ...; anything
/// else is "a number").
fn json_kind(raw: &str) -> &'static str {
    match raw.as_bytes().first() {
        Some(b'"') => "a string",
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b't' | b'f') => "a boolean",
        _ => "a number",
    }
}

/// The text of the JSON string `raw` (a whole string token, already validated by the
/// record's parse), unescaped; borrowed when it has no escapes.
fn json_text(raw: &str) -> Result<Cow<'_, str>, String> {
    match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Ok(Cow::Borrowed(inner)),
        _ => serde_json::from_str::<String>(raw)
            .map(Cow::Owned)
            .map_err(|e| format!("invalid JSON string: {e}")),
    }
}

/// A JSON string as a date (`ty` is `Date`) or a timestamp (`Timestamp`, `TimestampTz`).
fn json_date_time(ty: ColumnType, raw: &str) -> Result<Parsed, String> {
    if !raw.starts_with('"') {
        return Err(format!(
            "expected a date/time string, found {} `{raw}`",
            json_kind(raw)
        ));
    }
    let s = json_text(raw)?;
    if ty == ColumnType::Date {
        parse_date(s.trim().as_bytes())
            .map(Parsed::Date)
            .ok_or_else(|| format!("`{s}` is not a date (YYYY-MM-DD)"))
    } else {
        parse_timestamp(s.trim()).map(Parsed::Ts)
    }
}

/// A JSON integer as an `Int` (which it must fit) or a `Long`.
fn json_integer(ty: ColumnType, raw: &str) -> Result<Parsed, String> {
    let v = parse_integer(raw)
        .ok_or_else(|| format!("expected a JSON integer, found {} `{raw}`", json_kind(raw)))?;
    if ty == ColumnType::Int {
        i32::try_from(v)
            .map(Parsed::I32)
            .map_err(|_| format!("`{raw}` does not fit an int (32-bit)"))
    } else {
        Ok(Parsed::I64(v))
    }
}

/// A JSON number as a `Float` or a `Double`.
fn json_float(ty: ColumnType, raw: &str) -> Result<Parsed, String> {
    let kind = json_kind(raw);
    if raw.starts_with('"') || kind != "a number" {
        return Err(format!("expected a JSON number, found {kind} `{raw}`"));
    }
    let v: f64 = raw
        .parse()
        .map_err(|_| format!("`{raw}` is not a number"))?;
    Ok(if ty == ColumnType::Float {
        Parsed::F32(v as f32)
    } else {
        Parsed::F64(v)
    })
}

/// A JSON number, written without an exponent, as a decimal of `precision` and `scale`.
fn json_decimal(raw: &str, precision: u8, scale: i8) -> Result<Parsed, String> {
    let kind = json_kind(raw);
    if kind != "a number" {
        return Err(format!("expected a JSON number, found {kind} `{raw}`"));
    }
    if raw.contains(['e', 'E']) {
        return Err(format!(
            "`{raw}`: exponent notation is not accepted for decimal({precision},{scale})"
        ));
    }
    parse_decimal(raw, precision, scale).map(Parsed::Dec)
}

/// Where each column's raw value lies in the record being decoded (offset, length), and
/// the keys no column has; reused from record to record.
pub(super) struct Fields {
    slots: Vec<Option<(usize, usize)>>,
    unknown: Vec<String>,
    duplicate: Option<String>,
    /// Whether the last `read` parsed its record whole.
    parsed: bool,
}

impl Fields {
    fn new(columns: usize) -> Self {
        Fields {
            slots: vec![None; columns],
            unknown: Vec::new(),
            duplicate: None,
            parsed: false,
        }
    }

    /// Whether the record last read parsed whole and has a key no column has that is not a
    /// lineage column's name (those are refused, not added).
    fn has_new_key(&self) -> bool {
        self.parsed
            && self
                .unknown
                .iter()
                .any(|k| !LINEAGE_COLUMNS.contains(&k.as_str()))
    }

    /// Parses `text` (one whole JSON object, nothing after it) and locates its values.
    fn read(&mut self, columns: &[ColumnSpec], text: &str) -> serde_json::Result<()> {
        self.slots.iter_mut().for_each(|s| *s = None);
        self.unknown.clear();
        self.duplicate = None;
        self.parsed = false;
        let mut de = serde_json::Deserializer::from_str(text);
        let seed = Locate {
            columns,
            base: text.as_ptr() as usize,
            fields: self,
        };
        seed.deserialize(&mut de)?;
        de.end()?;
        self.parsed = true;
        Ok(())
    }
}

/// The visitor filling [`Fields`]: keys matched to columns where they lie in the line (the
/// column at the key's own position is tried first), values kept as raw text.
struct Locate<'s> {
    columns: &'s [ColumnSpec],
    base: usize,
    fields: &'s mut Fields,
}

/// A borrowed key, when it has no escapes.
#[derive(Deserialize)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'de> DeserializeSeed<'de> for Locate<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Locate<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let fields = self.fields;
        let mut position = 0;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let raw = map.next_value::<&'de RawValue>()?.get();
            let span = (raw.as_ptr() as usize).wrapping_sub(self.base);
            let column = match self.columns.get(position) {
                Some(c) if c.name == key => Some(position),
                _ => self.columns.iter().position(|c| c.name == key),
            };
            position += 1;
            let taken = match column {
                Some(i) => fields.slots[i].replace((span, raw.len())).is_some(),
                None if fields.unknown.iter().any(|k| *k == key) => true,
                None => {
                    fields.unknown.push(key.clone().into_owned());
                    false
                }
            };
            if taken && fields.duplicate.is_none() {
                fields.duplicate = Some(key.into_owned());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::{json_text, Fields};
    use crate::spec::{ColumnSpec, ColumnType};

    fn column(name: &str) -> ColumnSpec {
        ColumnSpec {
            name: name.into(),
            ty: ColumnType::String,
            required: false,
            added: false,
        }
    }

    #[test]
    fn values_are_found_by_key_in_any_order_and_repeats_are_caught() {
        let columns = [column("a"), column("b"), column("c")];
        let mut fields = Fields::new(columns.len());
        let line = r#"{"b": 1, "a" : "x\"y", "z": [2], "y": 0, "z": 3}"#;
        fields.read(&columns, line).unwrap();
        let value = |i: usize| fields.slots[i].map(|(s, n)| &line[s..s + n]);
        assert_eq!(value(0), Some(r#""x\"y""#));
        assert_eq!(value(1), Some("1"));
        assert_eq!(value(2), None);
        assert_eq!(fields.unknown, ["z", "y"]);
        assert_eq!(fields.duplicate.as_deref(), Some("z"));

        // The next record starts clean; a column given twice is a repeat too.
        fields
            .read(&columns, r#"{"c": null, "c": "again"}"#)
            .unwrap();
        assert_eq!(fields.slots[..2], [None, None]);
        assert!(fields.unknown.is_empty());
        assert_eq!(fields.duplicate.as_deref(), Some("c"));

        // Not one whole object: an error, whatever was located before it.
        assert!(fields.read(&columns, r#"{"a": "1"} {"#).is_err());
        assert!(fields.read(&columns, r#"{"a": "1""#).unwrap_err().is_eof());
        assert!(fields.read(&columns, "[1]").is_err());
    }

    #[test]
    fn string_text_is_borrowed_unless_escaped() {
        assert!(matches!(
            json_text(r#""plain é""#),
            Ok(Cow::Borrowed("plain é"))
        ));
        assert_eq!(json_text(r#""a\"b\\c\u00e9\n""#).unwrap(), "a\"b\\cé\n");
        assert_eq!(json_text(r#""""#).unwrap(), "");
    }
}
