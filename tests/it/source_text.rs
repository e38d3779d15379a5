//! Reading `src/` as text for the house checks (`architecture.rs`, `function_length.rs`):
//! every source file with its module path, code with strings, chars and comments blanked
//! (newlines kept, so line numbers hold), and code without its unit-test modules.

use std::path::{Path, PathBuf};

use super::common::repo;

/// One `.rs` file of `src/`: its path and its module path (`["run", "pipeline"]` for
/// `src/run/pipeline.rs`, `["run"]` for `src/run/mod.rs`, `["lib"]` for `src/lib.rs`).
pub struct Source {
    pub path: PathBuf,
    pub module_path: Vec<String>,
}

impl Source {
    /// The top-level module the file belongs to (`run` for `src/run/pipeline.rs`).
    pub fn module(&self) -> &str {
        &self.module_path[0]
    }

    /// The file's path below `src/`.
    pub fn relative(&self) -> &Path {
        self.path.strip_prefix(repo().join("src")).unwrap()
    }
}

/// Every `.rs` file under `src/`, sorted by path.
pub fn sources() -> Vec<Source> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = repo().join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(&src).unwrap().with_extension("");
            let mut module_path: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module_path.len() > 1 && module_path.last().is_some_and(|m| m == "mod") {
                module_path.pop();
            }
            Source { path, module_path }
        })
        .collect()
}

/// `code` with every string literal (raw ones too), char literal and comment replaced by
/// spaces; newlines are kept, so a line number in the result is one in `code`.
pub fn blank_literals(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    let blank = |out: &mut String, from: &[char]| {
        for c in from {
            out.push(if *c == '\n' { '\n' } else { ' ' });
        }
    };
    while i < chars.len() {
        let rest = &chars[i..];
        let end = if rest.starts_with(&['/', '/']) {
            rest.iter().position(|c| *c == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            (2..rest.len())
                .find(|&j| rest[j - 1] == '*' && rest[j] == '/')
                .map_or(rest.len(), |j| j + 1)
        } else if rest[0] == 'r'
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
            && raw_string_hashes(rest).is_some()
        {
            let hashes = raw_string_hashes(rest).unwrap();
            let open = 2 + hashes;
            (open..rest.len())
                .find(|&j| rest[j] == '"' && rest[j + 1..].iter().take(hashes).all(|c| *c == '#'))
                .map_or(rest.len(), |j| (j + 1 + hashes).min(rest.len()))
        } else if rest[0] == '"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != '"' {
                j += if rest[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(rest.len())
        } else if let Some(len) = char_literal_len(rest) {
            len
        } else {
            out.push(rest[0]);
            i += 1;
            continue;
        };
        blank(&mut out, &rest[..end]);
        i += end;
    }
    out
}

/// `Some(number of #)` when `rest` opens a raw string (`r"`, `r#"`, ...).
fn raw_string_hashes(rest: &[char]) -> Option<usize> {
    let hashes = rest[1..].iter().take_while(|c| **c == '#').count();
    (rest.get(1 + hashes) == Some(&'"')).then_some(hashes)
}

/// The length of a char literal opening `rest` (`'a'`, `'\n'`, `'\u{1F600}'`), or `None`
/// (a lifetime, a label).
fn char_literal_len(rest: &[char]) -> Option<usize> {
    if rest[0] != '\'' || rest.len() < 3 {
        return None;
    }
    if rest[1] == '\\' {
        let close = rest.iter().skip(3).position(|c| *c == '\'')?;
        return Some(close + 4);
    }
    (rest[2] == '\'').then_some(3)
}

/// A file's code without its unit tests (a `#[cfg(test)]` followed by `mod tests`).
pub fn without_unit_tests(text: &str) -> &str {
    let mut offset = 0;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).map_or("", |l| l.trim());
        if line.trim() == "#[cfg(test)]" && next.starts_with("mod tests") {
            return &text[..offset];
        }
        offset += line.len();
    }
    text
}

#[test]
fn literals_and_comments_are_blanked_keeping_lines() {
    let code = "let a = \"{ // }\"; // {\nlet b = r#\"}\"#; let c = '{'; /* { */ fn x<'a>() {}\n";
    let blanked = blank_literals(code);
    assert_eq!(blanked.lines().count(), 2);
    assert_eq!(blanked.matches('{').count(), 1, "{blanked}");
    assert_eq!(blanked.matches('}').count(), 1, "{blanked}");
    assert!(blanked.contains("fn x<'a>()"), "{blanked}");
}

#[test]
fn module_paths_follow_the_folders() {
    let all = sources();
    let path_of = |file: &str| {
        all.iter()
            .find(|s| s.relative() == Path::new(file))
            .map(|s| s.module_path.join("::"))
    };
    assert_eq!(path_of("run/pipeline.rs").as_deref(), Some("run::pipeline"));
    assert_eq!(path_of("run/mod.rs").as_deref(), Some("run"));
    assert_eq!(path_of("lib.rs").as_deref(), Some("lib"));
}
