//! A landing file rewritten without some of its records (`pipeline erase --rewrite-sources`):
//! every other byte is copied as it is (header, other records, line endings), so the file
//! still loads as before, minus those records. Records are named by the line they start on,
//! as bronze rows (`_source_line`) and quarantine rows (`line`) name them.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::spec::{CsvOptions, Format, IngestJob};

/// Writes `from` to `to` without the records starting on `lines` (1-based); returns how many
/// records it left out. `to` is written whole before this returns; `from` is not touched.
pub fn rewrite_without(
    job: &IngestJob,
    from: &Path,
    to: &Path,
    lines: &BTreeSet<u64>,
) -> Result<u64> {
    let out = File::create(to).map_err(|e| Error::io(to, e))?;
    let mut out = BufWriter::new(out);
    let removed = match job.format {
        Format::Json => without_lines(from, &mut out, lines)?,
        Format::Csv => without_records(&job.csv, from, &mut out, lines)?,
    };
    out.flush().map_err(|e| Error::io(to, e))?;
    out.get_ref().sync_all().map_err(|e| Error::io(to, e))?;
    Ok(removed)
}

/// JSON Lines: one record per line.
fn without_lines(from: &Path, out: &mut impl Write, lines: &BTreeSet<u64>) -> Result<u64> {
    let file = File::open(from).map_err(|e| Error::io(from, e))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let (mut line, mut removed) = (0u64, 0u64);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(from, e))?
            == 0
        {
            return Ok(removed);
        }
        line += 1;
        if lines.contains(&line) {
            removed += 1;
        } else {
            out.write_all(&buf).map_err(|e| Error::io(from, e))?;
        }
    }
}

/// CSV: a record may span lines (newlines inside quotes); its bytes run from where it starts
/// to where the next one starts.
fn without_records(
    csv: &CsvOptions,
    from: &Path,
    out: &mut impl Write,
    lines: &BTreeSet<u64>,
) -> Result<u64> {
    let mut numbers = super::csv_source::LineNumbers::of(from)?;
    let file = File::open(from).map_err(|e| Error::io(from, e))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(csv.delimiter)
        .quote(csv.quote)
        .terminator(numbers.terminator())
        .from_reader(BufReader::with_capacity(1 << 20, file));
    let mut bytes = File::open(from).map_err(|e| Error::io(from, e))?;
    let size = bytes.metadata().map_err(|e| Error::io(from, e))?.len();
    // The record before the current one, (byte offset, line): its bytes end where the next
    // record starts, so each record is copied or left out once that start is known.
    let mut record = csv::ByteRecord::new();
    let (mut previous, mut copied_to, mut removed): (Option<(u64, u64)>, u64, u64) = (None, 0, 0);
    loop {
        let more = reader
            .read_byte_record(&mut record)
            .map_err(|e| Error::Input {
                path: from.to_path_buf(),
                message: format!("cannot be rewritten without the erased records: {e}"),
            })?;
        // Where this record starts (and so where the one before ends).
        let start = record
            .position()
            .filter(|_| more)
            .map(|p| (p.byte(), numbers.line(p)));
        let end = start.map_or(size, |(byte, _)| byte);
        if let Some((from_byte, line)) = previous {
            if lines.contains(&line) {
                copy_range(&mut bytes, from, copied_to, from_byte, out)?;
                copied_to = end;
                removed += 1;
            }
        }
        if !more {
            break;
        }
        previous = start;
    }
    copy_range(&mut bytes, from, copied_to, size, out)?;
    Ok(removed)
}

fn copy_range(
    file: &mut File,
    path: &Path,
    from: u64,
    to: u64,
    out: &mut impl Write,
) -> Result<()> {
    if to <= from {
        return Ok(());
    }
    file.seek(SeekFrom::Start(from))
        .map_err(|e| Error::io(path, e))?;
    std::io::copy(&mut (&mut *file).take(to - from), out).map_err(|e| Error::io(path, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{without_lines, without_records};
    use crate::spec::CsvOptions;

    fn rewrite(text: &str, csv: bool, lines: &[u64]) -> (String, u64) {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("in");
        std::fs::write(&from, text).unwrap();
        let lines: BTreeSet<u64> = lines.iter().copied().collect();
        let mut out = Vec::new();
        let removed = if csv {
            let options = CsvOptions {
                delimiter: b',',
                quote: b'"',
                header: true,
            };
            without_records(&options, &from, &mut out, &lines).unwrap()
        } else {
            without_lines(&from, &mut out, &lines).unwrap()
        };
        (String::from_utf8(out).unwrap(), removed)
    }

    #[test]
    fn records_named_by_their_first_line_are_left_out_and_every_other_byte_is_kept() {
        let csv = "id,note\r\n1,a\r\n2,\"two\r\nlines\"\r\n3,c\r\n4,d";
        // Record 2 starts on line 3 and spans two lines; record 4 has no line end.
        assert_eq!(
            rewrite(csv, true, &[3, 6]),
            ("id,note\r\n1,a\r\n3,c\r\n".to_string(), 2)
        );
        assert_eq!(rewrite(csv, true, &[]), (csv.to_string(), 0));
        let json = "{\"id\":1}\n{\"id\":2}\n\n{\"id\":3}";
        assert_eq!(
            rewrite(json, false, &[2, 4]),
            ("{\"id\":1}\n\n".to_string(), 2)
        );
    }
}
