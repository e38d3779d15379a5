//! The top-level keys of one JSON Lines record, found by scanning its bytes (no decoding).
//!
//! Used to tell quickly that a record has no key a table lacks. On a valid JSON object
//! whose keys have no escapes it returns exactly the object's keys, in order. On anything
//! else it either returns `false` or some byte ranges: callers may trust only a `true`
//! whose keys are all known ("nothing new here", which is also what an invalid record
//! adds), and must decode the record properly in every other case.

use memchr::memchr2;

/// Fills `keys` with the byte ranges of `line`'s top-level keys (quotes excluded). `false`
/// when `line` is not an object this scan understands (a key with an escape included).
pub fn object_keys(line: &[u8], keys: &mut Vec<(usize, usize)>) -> bool {
    keys.clear();
    let mut i = skip_ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return false;
    }
    i = skip_ws(line, i + 1);
    if line.get(i) == Some(&b'}') {
        return skip_ws(line, i + 1) == line.len();
    }
    loop {
        if line.get(i) != Some(&b'"') {
            return false;
        }
        let start = i + 1;
        let end = match memchr2(b'"', b'\\', &line[start..]) {
            Some(p) if line[start + p] == b'"' => start + p,
            _ => return false,
        };
        keys.push((start, end));
        i = skip_ws(line, end + 1);
        if line.get(i) != Some(&b':') {
            return false;
        }
        let Some(after) = skip_value(line, skip_ws(line, i + 1)) else {
            return false;
        };
        i = skip_ws(line, after);
        match line.get(i) {
            Some(b',') => i = skip_ws(line, i + 1),
            Some(b'}') => return skip_ws(line, i + 1) == line.len(),
            _ => return false,
        }
    }
}

/// The index after JSON whitespace from `i`.
fn skip_ws(line: &[u8], mut i: usize) -> usize {
    while matches!(line.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The index after the value starting at `i` (exact on valid JSON).
fn skip_value(line: &[u8], i: usize) -> Option<usize> {
    match line.get(i)? {
        b'"' => skip_string(line, i),
        b'{' | b'[' => skip_nested(line, i),
        _ => {
            let len = line[i..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(line.len() - i);
            (len > 0).then_some(i + len)
        }
    }
}

/// The index after the string whose opening quote is at `i`.
fn skip_string(line: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let p = j + memchr2(b'"', b'\\', line.get(j..)?)?;
        if line[p] == b'"' {
            return Some(p + 1);
        }
        j = p + 2; // the escaped character cannot end the string
    }
}

/// The index after the object or array opening at `i`, strings inside skipped whole.
fn skip_nested(line: &[u8], i: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = i;
    while j < line.len() {
        match line[j] {
            b'"' => {
                j = skip_string(line, j)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::object_keys;

    fn keys(line: &str) -> Option<Vec<String>> {
        let mut spans = Vec::new();
        object_keys(line.as_bytes(), &mut spans)
            .then(|| spans.iter().map(|&(s, e)| line[s..e].to_string()).collect())
    }

    #[test]
    fn finds_exactly_the_top_level_keys_of_valid_objects() {
        let cases: &[(&str, &[&str])] = &[
            ("{}", &[]),
            (" { } \r\n", &[]),
            (r#"{"a":1,"b":"x"}"#, &["a", "b"]),
            (
                r#"{ "a" : -1.5e+3 , "b" : [1, {"c": "}"}], "d": {"e": "\"]"}, "f": null }"#,
                &["a", "b", "d", "f"],
            ),
            (
                r#"{"s": "a\\", "t": true, "u": "{\u0041"}"#,
                &["s", "t", "u"],
            ),
            (r#"{"é": false}"#, &["é"]),
        ];
        for (line, want) in cases {
            assert_eq!(
                keys(line).as_deref(),
                Some(&want.iter().map(|s| s.to_string()).collect::<Vec<_>>()[..]),
                "{line}"
            );
            // Agrees with a real parser.
            let parsed: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(line).unwrap();
            let mut real: Vec<_> = parsed.keys().cloned().collect();
            let mut ours = keys(line).unwrap();
            real.sort();
            ours.sort();
            assert_eq!(ours, real, "{line}");
        }
    }

    #[test]
    fn declines_what_it_does_not_understand() {
        for line in [
            "",
            "[1]",
            r#"{"a\"b": 1}"#,
            r#"{"a": 1"#,
            r#"{"a": "open}"#,
            r#"{"a": 1} x"#,
            r#"{"a" 1}"#,
            r#"{"a": }"#,
            r#"{"a": [1, 2}"#,
            r#"{"a": 1,}"#,
        ] {
            assert_eq!(keys(line), None, "{line}");
        }
    }
}
