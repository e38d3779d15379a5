//! The house of `src/` as `docs/architecture.md` draws it: every module imports only the
//! layers below it, no file passes 600 lines, and `main.rs` stays a thin shell. Read from the
//! source text (`crate::MODULE` paths), outside unit-test modules.

use std::path::{Path, PathBuf};

use super::common::repo;

/// The layers of `src/`, bottom first (docs/architecture.md).
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["secrets", "output", "fault"],
    &["spec"],
    &["catalog", "write", "engine", "lineage"],
    &["records"],
    &["commit", "cluster"],
    &["ingest", "transform", "compact"],
    &["quality"],
    &["plan"],
    &["run", "inspect", "maintain"],
    &["schedule", "mcp", "docs"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every `.rs` file under `src/`, with its top-level module.
fn sources() -> Vec<(PathBuf, String)> {
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
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap().as_os_str();
            let module = first.to_string_lossy().trim_end_matches(".rs").to_string();
            (path, module)
        })
        .collect()
}

/// A file's code without its unit tests (a `#[cfg(test)]` followed by `mod tests`).
fn without_unit_tests(text: &str) -> &str {
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

/// The `crate::MODULE` paths in `code`, with their line numbers.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let code_part = line.split("//").next().unwrap_or("");
        let mut rest = code_part;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((n + 1, name));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn every_module_imports_only_the_layers_below_it() {
    let mut wrong = Vec::new();
    let mut unknown = Vec::new();
    for (path, module) in sources() {
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(own) = layer_of(&module) else {
            unknown.push(module.clone());
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, used) in crate_paths(without_unit_tests(&text)) {
            if used == module {
                continue;
            }
            match layer_of(&used) {
                Some(layer) if layer < own => {}
                _ => wrong.push(format!(
                    "{}:{line}: `{module}` (layer {own}) imports `{used}` ({})",
                    path.display(),
                    layer_of(&used).map_or("no layer".into(), |l| format!("layer {l}"))
                )),
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "modules without a layer in docs/architecture.md: {unknown:?}"
    );
    assert!(
        wrong.is_empty(),
        "imports that do not run down the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_layer_check_reads_imports_and_skips_unit_tests() {
    let code = "use crate::commit::StagedTable; // crate::cli\nlet x = crate::spec::Grain::Day;\n#[cfg(test)]\nmod tests {\n    use crate::run::Silent;\n}\n";
    assert_eq!(
        crate_paths(without_unit_tests(code)),
        vec![(1, "commit".to_string()), (2, "spec".to_string())]
    );
    assert!(layer_of("commit") < layer_of("run"));
    assert_eq!(layer_of("no_such_module"), None);
}

#[test]
fn no_file_holds_two_ideas_and_main_is_a_thin_shell() {
    let mut long = Vec::new();
    for (path, module) in sources() {
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        if lines > 600 || (module == "main" && lines >= 60) {
            long.push(format!("{}: {lines} lines", path.display()));
        }
    }
    assert!(
        long.is_empty(),
        "files over 600 lines (main.rs: 60):\n{}",
        long.join("\n")
    );
}

/// One path for deleting files (DESIGN.md, decision 8): outside unit tests, only the deletion
/// path (`commit/deletion.rs`) removes or replaces files, and only the embedded warehouse's
/// storage (`catalog/local_fs.rs`, which that path calls through iceberg's `FileIO`)
/// implements removal; nothing else calls `FileIO::delete`.
#[test]
fn only_the_deletion_path_removes_files() {
    let allowed = ["commit/deletion.rs", "catalog/local_fs.rs"];
    let removals = [
        "remove_file(",
        "remove_dir(",
        "remove_dir_all(",
        "fs::rename(",
        "file_io().delete",
        ".delete_prefix(",
        ".delete_stream(",
        "FileIO::delete",
    ];
    let mut found = Vec::new();
    for (path, _) in sources() {
        let relative = path.strip_prefix(repo().join("src")).unwrap().to_path_buf();
        if allowed.iter().any(|a| relative == Path::new(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in without_unit_tests(&text).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            // The snapshot summary collector's `remove_file` counts a file; it deletes nothing.
            if code.contains("collector.remove_file(") {
                continue;
            }
            if removals.iter().any(|r| code.contains(r)) {
                found.push(format!("{}:{}: {}", relative.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "files removed outside commit/deletion.rs:\n{}",
        found.join("\n")
    );
}
