//! No function of `src/` outside unit tests runs over 80 lines (from its `fn` line to its
//! closing brace), so every step of the engine can be read on one screen. Braces inside strings,
//! chars and comments do not count; a `#[cfg(test)]` item is skipped whole.

use super::source_text::{blank_literals, sources};

const LIMIT: usize = 80;

/// One function: its name, first line (1-based) and length in lines.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    line: usize,
    lines: usize,
}

/// The name declared by a line that opens a function (`pub(crate) async fn name`), if any.
fn function_name(line: &str) -> Option<String> {
    let mut words = line.split_whitespace().peekable();
    while let Some(word) = words.peek() {
        let qualifier = *word == "pub"
            || word.starts_with("pub(")
            || ["const", "async", "unsafe", "extern", "\"C\"", "default"].contains(word);
        if !qualifier {
            break;
        }
        words.next();
    }
    if words.next() != Some("fn") {
        return None;
    }
    let name: String = words
        .next()?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The index of the line where the item opening at `start` ends (its braces balance), or
/// `None` when it ends with `;` before any brace (a declaration without a body).
fn item_end(lines: &[&str], start: usize) -> Option<usize> {
    let mut depth = 0i64;
    let mut opened = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        for c in line.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            return Some(i);
        }
        if !opened && line.trim_end().ends_with(';') {
            return None;
        }
    }
    None
}

/// Every function with a body in `code`, nested ones too, outside `#[cfg(test)]` items.
fn functions(code: &str) -> Vec<Function> {
    let blanked = blank_literals(code);
    let lines: Vec<&str> = blanked.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("#[cfg(test)]") {
            i = item_end(&lines, i + 1).unwrap_or(i) + 1;
            continue;
        }
        if let Some(name) = function_name(lines[i]) {
            if let Some(end) = item_end(&lines, i) {
                found.push(Function {
                    name,
                    line: i + 1,
                    lines: end - i + 1,
                });
            }
        }
        i += 1;
    }
    found
}

#[test]
fn no_function_runs_over_80_lines() {
    let mut long = Vec::new();
    for source in sources() {
        let text = std::fs::read_to_string(&source.path).unwrap();
        for f in functions(&text) {
            if f.lines > LIMIT {
                long.push(format!(
                    "src/{}:{} `{}`: {} lines",
                    source.relative().display(),
                    f.line,
                    f.name,
                    f.lines
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {LIMIT} lines (split them by meaning):\n{}",
        long.join("\n")
    );
}

#[test]
fn a_planted_long_function_is_found_and_tests_strings_and_comments_are_not() {
    let body = "    let x = 1;\n".repeat(LIMIT);
    let code = format!(
        "/// doc\npub(crate) async fn planted(a: &str) -> usize {{\n    let s = \"}}\"; // }}\n{body}    a.len()\n}}\n\nfn short() {{ let c = '}}'; }}\n\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}    }}\n}}\n"
    );
    let found = functions(&code);
    assert_eq!(
        found,
        vec![
            Function {
                name: "planted".into(),
                line: 2,
                lines: LIMIT + 4,
            },
            Function {
                name: "short".into(),
                line: LIMIT + 7,
                lines: 1,
            },
        ]
    );
    assert_eq!(function_name("    fn f();"), Some("f".into()));
    assert_eq!(function_name("let fn_name = 1;"), None);
}
