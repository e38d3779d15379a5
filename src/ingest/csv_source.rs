//! CSV decoding (RFC 4180: quoted delimiters, doubled quotes, newlines inside quotes) with the
//! line number where each record starts and its raw text for quarantine.
//!
//! Lines end with `\n` or `\r\n` (the last one may have no end). Records are split at `\n`
//! only, so the reader's line numbers and byte offsets count every line; the `\r` of a
//! `\r\n` ending is then the last byte of the record's last field, and is dropped there. A
//! file whose lines end with a lone `\r` (no `\n` at all) is read with `\r` as the ending, and
//! its line numbers count the `\r`s before each record (the reader counts `\n`s only), so
//! `(_source_file, _source_line)` names one record there too.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::evolve::{header_names, reserved_error, undeclared_error};
use super::sink::RecordSink;
use super::values::{parse_text, Parsed, NUL_IN_TEXT};
use crate::error::{Error, Result};
use crate::spec::{ColumnType, IngestJob, SchemaEvolution, LINEAGE_COLUMNS};

/// How a file's lines end, judged from its first 64 KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineEnd {
    /// `\n` or `\r\n` (or one line without an end).
    Newline,
    /// A lone `\r` (no `\n` in the file's start).
    CarriageReturn,
}

fn line_end(path: &Path) -> Result<LineEnd> {
    let mut start = vec![0u8; 64 * 1024];
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut filled = 0;
    while filled < start.len() {
        let n = file
            .read(&mut start[filled..])
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    let start = &start[..filled];
    Ok(if !start.contains(&b'\n') && start.contains(&b'\r') {
        LineEnd::CarriageReturn
    } else {
        LineEnd::Newline
    })
}

/// The line where each record starts, as the ingest numbers lines: the reader's own count for
/// `\n` endings; for a file of lone `\r` endings, 1 + the `\r`s before the record's first
/// byte, counted once as the records go by.
pub(super) struct LineNumbers {
    end: LineEnd,
    file: File,
    /// Bytes counted so far, and the `\r`s among them.
    counted: u64,
    returns: u64,
}

impl LineNumbers {
    /// Line numbers for `path` (whose line ending is judged from its first 64 KiB).
    pub(super) fn of(path: &Path) -> Result<LineNumbers> {
        Ok(LineNumbers {
            end: line_end(path)?,
            file: File::open(path).map_err(|e| Error::io(path, e))?,
            counted: 0,
            returns: 0,
        })
    }

    /// The record terminator a reader of this file uses, so that its line numbers count as
    /// these do (the line ending is judged once per file, here).
    pub(super) fn terminator(&self) -> csv::Terminator {
        match self.end {
            LineEnd::Newline => csv::Terminator::Any(b'\n'),
            LineEnd::CarriageReturn => csv::Terminator::CRLF,
        }
    }

    /// The line of a record that starts at `position` (positions come in file order).
    pub(super) fn line(&mut self, position: &csv::Position) -> u64 {
        if self.end == LineEnd::Newline {
            return position.line();
        }
        let to = position.byte();
        if to > self.counted {
            let mut chunk = vec![0u8; (to - self.counted).min(1 << 20) as usize];
            let _ = self.file.seek(SeekFrom::Start(self.counted));
            while self.counted < to {
                let want = ((to - self.counted) as usize).min(chunk.len());
                match self.file.read(&mut chunk[..want]) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        self.returns += chunk[..n].iter().filter(|b| **b == b'\r').count() as u64;
                        self.counted += n as u64;
                    }
                }
            }
        }
        1 + self.returns
    }
}

/// Field `i` of `record`, without the `\r` of a `\r\n` line ending when it is the last.
fn field(record: &csv::ByteRecord, i: usize, end: LineEnd) -> &[u8] {
    let bytes = &record[i];
    match (end, bytes.last()) {
        (LineEnd::Newline, Some(b'\r')) if i + 1 == record.len() => &bytes[..bytes.len() - 1],
        _ => bytes,
    }
}

/// The text of field `i` (as [`field`] cuts it) when `whole` is [`record_text`]'s `Some`;
/// otherwise checked on its own: `None` when it is not UTF-8.
fn field_text<'r>(
    record: &'r csv::ByteRecord,
    whole: Option<&'r str>,
    i: usize,
    end: LineEnd,
) -> Option<&'r str> {
    let bytes = field(record, i, end);
    match (whole, record.range(i)) {
        (Some(all), Some(range)) => all.get(range.start..range.start + bytes.len()),
        _ => std::str::from_utf8(bytes).ok(),
    }
}

/// The bytes of all of `record`'s fields as one text, when they are UTF-8 with no NUL byte and
/// every field starts and ends on a character boundary (then each field is UTF-8 by itself):
/// one check per record instead of one per field and use. `None` otherwise (the caller checks
/// field by field, and only the fields it loads).
fn record_text(record: &csv::ByteRecord) -> Option<&str> {
    let all = std::str::from_utf8(record.as_slice()).ok()?;
    let cut_at_chars = (0..record.len()).all(|i| {
        record
            .range(i)
            .is_some_and(|r| all.is_char_boundary(r.start) && all.is_char_boundary(r.end))
    });
    (cut_at_chars && memchr::memchr(0, all.as_bytes()).is_none()).then_some(all)
}

/// A line holding nothing but its `\r\n` ending.
fn is_blank(record: &csv::ByteRecord, end: LineEnd) -> bool {
    end == LineEnd::Newline && record.len() == 1 && &record[0] == b"\r"
}

/// The reader's buffer for a file of `len` bytes: the file and one byte (so the reader sees its
/// end in the same read), at least 8 KiB and at most 1 MiB. A fixed 1 MiB was zeroed (and, being
/// a fresh mapping, faulted in) once per file: for a year of small daily files, more bytes than
/// the files hold.
fn buffer_bytes(len: u64) -> usize {
    usize::try_from(len)
        .unwrap_or(usize::MAX)
        .saturating_add(1)
        .clamp(8 << 10, 1 << 20)
}

/// Reads one CSV file into the sink.
pub fn read_csv(job: &IngestJob, path: &Path, sink: &mut RecordSink) -> Result<()> {
    let mut numbers = LineNumbers::of(path)?;
    let end = numbers.end;
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut raw_reader = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(job.csv.delimiter)
        .quote(job.csv.quote)
        .terminator(numbers.terminator())
        .buffer_capacity(buffer_bytes(len))
        .from_reader(file);

    let mut record = csv::ByteRecord::new();
    let n = job.columns.len();
    let (mut positions, mut expected_fields) = declared_positions(job);
    if job.csv.header {
        if !read_header_record(&mut reader, &mut record, path, end)? {
            return Ok(()); // empty file: no header, no records
        }
        let header = header_names(&csv::StringRecord::from_byte_record_lossy(record.clone()));
        header_positions(job, path, &header, &mut positions)?;
        expected_fields = header.len();
    }

    let mut values = vec![Parsed::Null; n];
    loop {
        let more = reader
            .read_byte_record(&mut record)
            .map_err(|e| csv_error(path, e))?;
        if !more {
            break;
        }
        if is_blank(&record, end) {
            continue;
        }
        let (line, start) = match record.position() {
            Some(p) => (numbers.line(p), p.byte()),
            None => (0, 0),
        };
        let whole = record_text(&record);
        match decode(
            job,
            &record,
            whole,
            end,
            &positions,
            expected_fields,
            &mut values,
        ) {
            Ok(()) => sink.good(&values, line, |i| {
                // String columns were checked to be UTF-8 by `decode`.
                positions[i]
                    .and_then(|p| field_text(&record, whole, p, end))
                    .unwrap_or_default()
            })?,
            Err((reason, column)) => {
                let end = reader.position().byte();
                let raw = raw_text(&mut raw_reader, start, end);
                sink.bad(path, line, &raw, reason, column)?;
            }
        }
    }
    Ok(())
}

/// The field index of each column of `job` in a file without a header (`None`: an added
/// column, which reads NULL), and the number of fields such a file's records have.
fn declared_positions(job: &IngestJob) -> (Vec<Option<usize>>, usize) {
    // Field index of each column (`None`: an added column this file does not have).
    // Without a header, the declared columns are the fields in order; columns kept from
    // earlier versions of the spec have no position and read NULL.
    let mut positions: Vec<Option<usize>> = Vec::with_capacity(job.columns.len());
    let mut declared = 0;
    for col in &job.columns {
        positions.push((!col.added).then_some(declared));
        declared += usize::from(!col.added);
    }
    (positions, declared)
}

/// Reads the header line into `record`, skipping blank lines before it; `false` when the file
/// has no line at all.
fn read_header_record(
    reader: &mut csv::Reader<File>,
    record: &mut csv::ByteRecord,
    path: &Path,
    end: LineEnd,
) -> Result<bool> {
    loop {
        if !reader
            .read_byte_record(record)
            .map_err(|e| csv_error(path, e))?
        {
            return Ok(false);
        }
        if !is_blank(record, end) {
            return Ok(true);
        }
    }
}

/// Sets the field index of each column of `job` to its place in `header`. A declared column
/// the header lacks, a lineage column in it, or (unless `schema_evolution = "ignore"`, which
/// warns) any other column the schema does not declare is an error.
fn header_positions(
    job: &IngestJob,
    path: &Path,
    header: &[String],
    positions: &mut [Option<usize>],
) -> Result<()> {
    for (i, col) in job.columns.iter().enumerate() {
        positions[i] = header.iter().position(|h| h == &col.name);
        if positions[i].is_none() && !col.added {
            return Err(Error::Input {
                path: path.to_path_buf(),
                message: format!(
                    "line 1: the header has no column `{}` (declared in the schema of {}); header: {}",
                    col.name,
                    job.table,
                    header.join(",")
                ),
            });
        }
    }
    // An empty name (a trailing delimiter) names no column.
    let extra: Vec<&str> = header
        .iter()
        .filter(|h| !h.is_empty() && !job.columns.iter().any(|c| &c.name == *h))
        .map(|h| h.as_str())
        .collect();
    if let Some(reserved) = extra.iter().find(|h| LINEAGE_COLUMNS.contains(*h)) {
        return Err(reserved_error(path, 1, reserved));
    }
    if !extra.is_empty() {
        if job.schema_evolution == SchemaEvolution::Ignore {
            tracing::warn!(
                file = %path.display(),
                "columns not in the schema of {} are not loaded (schema_evolution = \"ignore\"): {}",
                job.table,
                extra.join(", ")
            );
        } else {
            return Err(undeclared_error(job, path, 1, &extra));
        }
    }
    Ok(())
}

/// Decodes the loaded fields of one record (with its [`record_text`] and line ending) into
/// `values`; the first bad one is the error, with its column.
fn decode<'j>(
    job: &'j IngestJob,
    record: &csv::ByteRecord,
    whole: Option<&str>,
    end: LineEnd,
    positions: &[Option<usize>],
    expected_fields: usize,
    values: &mut [Parsed],
) -> Result<(), (String, Option<&'j str>)> {
    if record.len() != expected_fields {
        return Err((
            format!("expected {expected_fields} fields, found {}", record.len()),
            None,
        ));
    }
    for (i, col) in job.columns.iter().enumerate() {
        let Some(position) = positions[i] else {
            values[i] = Parsed::Null;
            continue;
        };
        let text = field_text(record, whole, position, end).ok_or_else(|| {
            (
                format!("column {}: invalid UTF-8", col.name),
                Some(col.name.as_str()),
            )
        })?;
        if whole.is_none() && text.as_bytes().contains(&0) {
            return Err((
                format!("column {}: {NUL_IN_TEXT}", col.name),
                Some(col.name.as_str()),
            ));
        }
        values[i] = if job.null_values.iter().any(|nv| nv == text) {
            if col.required {
                return Err((
                    format!("column {}: NULL in a `not null` column", col.name),
                    Some(col.name.as_str()),
                ));
            }
            Parsed::Null
        } else {
            parse_text(col.ty, text)
                .map_err(|r| (format!("column {}: {r}", col.name), Some(col.name.as_str())))?
        };
        debug_assert!(
            col.ty != ColumnType::String || values[i] == Parsed::Str || values[i] == Parsed::Null
        );
    }
    Ok(())
}

/// The raw bytes of a record, without its line terminator.
fn raw_text(file: &mut File, start: u64, end: u64) -> String {
    let mut buf = vec![0u8; end.saturating_sub(start) as usize];
    if file.seek(SeekFrom::Start(start)).is_err() || file.read_exact(&mut buf).is_err() {
        return String::new();
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn csv_error(path: &Path, e: csv::Error) -> Error {
    let line = e.position().map(|p| p.line()).unwrap_or(0);
    Error::BadRecord {
        file: path.to_path_buf(),
        line,
        reason: format!("unreadable CSV: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{field_text, record_text, LineEnd};

    fn record(fields: &[&[u8]]) -> csv::ByteRecord {
        csv::ByteRecord::from(fields.to_vec())
    }

    /// The whole-record check gives each field exactly the text a check of that field alone
    /// gives, and gives up (so fields are checked one by one) on anything else.
    #[test]
    fn one_check_per_record_agrees_with_checking_each_field() {
        let cases: &[&[&[u8]]] = &[
            &[b"1", b"caf\xc3\xa9", b"x\r"],
            &[b"", b"\xe2\x82\xac", b""],
            // A character cut in two by the field boundary: UTF-8 when joined, not apart.
            &[b"a\xc3", b"\xa9b"],
            &[b"ok", b"nul\x00here"],
            &[b"bad\xff", b"ok"],
        ];
        for fields in cases {
            let r = record(fields);
            let whole = record_text(&r);
            let each_ok = fields
                .iter()
                .all(|f| std::str::from_utf8(f).is_ok() && !f.contains(&0));
            assert_eq!(whole.is_some(), each_ok, "{fields:?}");
            for end in [LineEnd::Newline, LineEnd::CarriageReturn] {
                for i in 0..fields.len() {
                    let alone = field_text(&r, None, i, end);
                    assert_eq!(field_text(&r, whole, i, end), alone, "{fields:?} {i}");
                }
            }
        }
        let r = record(&[b"1", b"x\r"]);
        assert_eq!(
            field_text(&r, record_text(&r), 1, LineEnd::Newline),
            Some("x")
        );
        assert_eq!(
            field_text(&r, record_text(&r), 1, LineEnd::CarriageReturn),
            Some("x\r")
        );
        let cut = record(&[b"a\xc3", b"\xa9b"]);
        assert_eq!(
            field_text(&cut, record_text(&cut), 0, LineEnd::Newline),
            None
        );
    }
}
