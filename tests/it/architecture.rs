//! The house of `src/` as `docs/architecture.md` draws it: every module imports only the
//! layers below it, no file passes 600 lines, and `main.rs` stays a thin shell. Read from the
//! source text (`crate::MODULE` paths), outside unit-test modules.

use std::path::Path;

use super::common::repo;
use super::source_text::{blank_literals, sources, without_unit_tests};

/// The layers of `src/`, bottom first (docs/architecture.md).
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["secrets", "output", "fault", "memory_cap", "id_text"],
    &["spec"],
    &["catalog", "write", "engine", "lineage"],
    &["records"],
    &["commit", "cluster"],
    &["ingest", "transform"],
    &["quality"],
    &["plan"],
    &["operation", "inspect"],
    &["maintain", "rollback", "dml", "env"],
    &["run"],
    &["erase"],
    &["schedule", "mcp", "docs"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The top-level modules `code` reaches, each with its line: every `crate::MODULE` path, and
/// every `super::` chain that climbs out of the file's own top-level module to the crate root
/// (`super::run::X` in `src/rollback.rs`, `super::super::{maintain, run}` in
/// `src/erase/x/y.rs`). `module_path` is the file's (`Source::module_path`). Paths in strings
/// and comments do not count.
fn reached_modules(module_path: &[String], code: &str) -> Vec<(usize, String)> {
    let code = blank_literals(code);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = next_path_start(&code, at) {
        let (rest, climbs) = if code[found..].starts_with("crate::") {
            (found + "crate::".len(), None)
        } else {
            let mut end = found;
            let mut climbs = 0;
            while code[end..].starts_with("super::") {
                end += "super::".len();
                climbs += 1;
            }
            (end, Some(climbs))
        };
        at = rest;
        let at_root = match climbs {
            None => true,
            Some(climbs) => climbs >= module_path.len(),
        };
        if at_root {
            for name in first_names(&code[rest..]) {
                out.push((line_of(found), name));
            }
        }
    }
    out
}

/// Where the next `crate::` or `super::` path starting at a word boundary begins, at or after
/// byte `from`.
fn next_path_start(code: &str, from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let crate_at = code[at..].find("crate::").map(|i| i + at);
        let super_at = code[at..].find("super::").map(|i| i + at);
        let found = match (crate_at, super_at) {
            (Some(c), Some(s)) => c.min(s),
            (c, s) => c.or(s)?,
        };
        let before = code[..found].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            at = found + 1;
            continue;
        }
        return Some(found);
    }
}

/// The first path segment after `crate::` or a climb to the root: one name, or the first name
/// of each item of a `{...}` group; `*` for a glob.
fn first_names(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        let s = s.trim_start();
        if s.starts_with('*') {
            return "*".into();
        }
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)]
            .into_iter()
            .filter(|n| !n.is_empty())
            .collect();
    };
    let mut names = Vec::new();
    let mut depth = 0;
    let mut item_start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                names.push(ident(&group[item_start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(ident(&group[item_start..i]));
                item_start = i + 1;
            }
            _ => {}
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

#[test]
fn every_module_imports_only_the_layers_below_it() {
    let mut wrong = Vec::new();
    let mut unknown = Vec::new();
    for source in sources() {
        let module = source.module();
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(own) = layer_of(module) else {
            unknown.push(module.to_string());
            continue;
        };
        let text = std::fs::read_to_string(&source.path).unwrap();
        for (line, used) in reached_modules(&source.module_path, without_unit_tests(&text)) {
            if used == module {
                continue;
            }
            match layer_of(&used) {
                Some(layer) if layer < own => {}
                _ => wrong.push(format!(
                    "src/{}:{line}: `{module}` (layer {own}) imports `{used}` ({})",
                    source.relative().display(),
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
fn the_layer_check_reads_crate_and_super_paths_and_skips_unit_tests() {
    let path = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
    let code = "use crate::commit::StagedTable; // crate::cli\nlet x = crate::spec::Grain::Day;\nlet s = \"crate::mcp\";\n#[cfg(test)]\nmod tests {\n    use crate::run::Silent;\n}\n";
    assert_eq!(
        reached_modules(&path("run::pipeline"), without_unit_tests(code)),
        vec![(1, "commit".to_string()), (2, "spec".to_string())]
    );
    // `super::` inside the file's own module stays there; out of it, it names a module.
    let climbs = "use super::open::Held;\nuse super::super::{maintain::X, run};\nuse super::*;\n";
    assert_eq!(
        reached_modules(&path("erase::purge"), climbs),
        vec![(2, "maintain".to_string()), (2, "run".to_string())]
    );
    assert_eq!(
        reached_modules(
            &path("rollback"),
            "use super::{\n    cli::print,\n    run,\n};\n"
        ),
        vec![(1, "cli".to_string()), (1, "run".to_string())]
    );
    assert_eq!(
        reached_modules(&path("rollback"), "use super::*;"),
        vec![(1, "*".to_string())]
    );
    assert!(layer_of("commit") < layer_of("run"));
    assert_eq!(layer_of("no_such_module"), None);
}

/// The layers a drawing shows, top first: the module names in the first column of each line
/// (names two spaces apart, the column ending at three spaces; a `/` or `.rs` is dropped).
/// When `numbered`, only lines opening with a layer number count (`  3    catalog/  write/`);
/// otherwise a line opening with a space continues the one above.
fn drawn_layers(drawing: &str, numbered: bool) -> Vec<Vec<String>> {
    let mut layers = Vec::new();
    for line in drawing.lines() {
        let mut text = line.trim_end();
        if numbered {
            let Some((number, rest)) = text.trim_start().split_once(' ') else {
                continue;
            };
            if number.parse::<usize>().is_err() {
                continue;
            }
            text = rest.trim_start();
        } else if text.starts_with(' ') {
            continue;
        }
        let first = text.split("   ").next().unwrap_or("").trim();
        if first.is_empty() {
            continue;
        }
        layers.push(
            first
                .split("  ")
                .map(|m| m.trim().trim_end_matches('/').trim_end_matches(".rs"))
                .filter(|m| !m.is_empty())
                .map(String::from)
                .collect(),
        );
    }
    layers
}

/// The first fenced block of `text` after the line starting with `after`.
fn fenced_after<'t>(text: &'t str, after: &str) -> &'t str {
    let start = text.find(after).expect("the marker line is there");
    let open = start + text[start..].find("```").expect("a fenced block") + 3;
    let open = open + text[open..].find('\n').unwrap() + 1;
    let close = open + text[open..].find("```").expect("the block is closed");
    &text[open..close]
}

/// `LAYERS` top first, as the drawings list them.
fn layers_top_first() -> Vec<Vec<String>> {
    LAYERS
        .iter()
        .rev()
        .map(|l| l.iter().map(|m| m.to_string()).collect())
        .collect()
}

#[test]
fn the_drawings_of_the_house_are_the_layers_the_check_enforces() {
    let doc = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let table = fenced_after(&doc, "# Architecture");
    assert_eq!(
        drawn_layers(table, true),
        layers_top_first(),
        "docs/architecture.md's table"
    );
    let lib = std::fs::read_to_string(repo().join("src/lib.rs")).unwrap();
    let diagram: String = fenced_after(&lib, "//! Layers")
        .lines()
        .map(|l| l.trim_start_matches("//!").strip_prefix(' ').unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        drawn_layers(&diagram, false),
        layers_top_first(),
        "src/lib.rs's diagram"
    );
}

#[test]
fn a_drawing_is_read_line_by_line() {
    let table = "layer  modules (src/)    what\n  10   cli/                 the command line\n  3    catalog/  write/  engine/  lineage/\n                        open catalogs\n  1    secrets  inspect.rs   leaves\n";
    let expected = vec![
        vec!["cli"],
        vec!["catalog", "write", "engine", "lineage"],
        vec!["secrets", "inspect"],
    ];
    assert_eq!(drawn_layers(table, true), expected);
    let diagram = "cli                 the command line\nrun  inspect        one run;\n                    read-only views\n";
    assert_eq!(
        drawn_layers(diagram, false),
        vec![vec!["cli"], vec!["run", "inspect"]]
    );
}

#[test]
fn no_file_holds_two_ideas_and_main_is_a_thin_shell() {
    let mut long = Vec::new();
    for source in sources() {
        let lines = std::fs::read_to_string(&source.path)
            .unwrap()
            .lines()
            .count();
        if lines > 600 || (source.module() == "main" && lines >= 60) {
            long.push(format!(
                "src/{}: {lines} lines",
                source.relative().display()
            ));
        }
    }
    assert!(
        long.is_empty(),
        "files over 600 lines (main.rs: 60):\n{}",
        long.join("\n")
    );
}

/// One path for deleting files (DESIGN.md, decision 8): outside unit tests, only the deletion
/// path (`commit/deletion.rs`) removes or replaces files, and only the storages that path calls
/// through iceberg's `FileIO` implement removal: the embedded warehouse's
/// (`catalog/local_fs.rs`) and a REST catalog's, which sends each path to the FileIO of the
/// credentials vended for it (`catalog/rest/vended.rs`); nothing else calls `FileIO::delete`.
#[test]
fn only_the_deletion_path_removes_files() {
    let allowed = [
        "commit/deletion.rs",
        "catalog/local_fs.rs",
        "catalog/rest/vended.rs",
    ];
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
    for source in sources() {
        let relative = source.relative().to_path_buf();
        if allowed.iter().any(|a| relative == Path::new(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&source.path).unwrap();
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

/// One skeleton for every table-changing command (`operation::operate`): outside the publish
/// protocol itself (`commit/publish/`) and the skeleton (`operation/`), nothing publishes or
/// takes a run lock with recovery, so no command can skip the lock, the recovery, the audit or
/// the record.
#[test]
fn only_the_operation_skeleton_publishes() {
    let publishing = [
        "publisher(",
        ".try_publish(",
        "publish::publish(",
        "lock_and_recover(",
        "lock_project_and_recover(",
        "recover(catalog",
    ];
    let mut found = Vec::new();
    for source in sources() {
        let relative = source.relative().to_string_lossy().into_owned();
        if relative.starts_with("commit/publish/") || relative.starts_with("operation/") {
            continue;
        }
        let text = std::fs::read_to_string(&source.path).unwrap();
        let code = blank_literals(without_unit_tests(&text));
        for (n, line) in code.lines().enumerate() {
            if publishing.iter().any(|p| line.contains(p)) {
                found.push(format!("src/{relative}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "publishing outside operation::operate:\n{}",
        found.join("\n")
    );
}
