//! The printers of the commands that write files outside the lake: `pipeline init` (a
//! scaffold), `pipeline query --out` (an export) and `pipeline docs` (a site).

use super::print::json;

/// `pipeline init`: the files written and what to do next.
pub fn scaffold(scaffold: &super::init::Scaffold, as_json: bool) {
    if as_json {
        return json(scaffold);
    }
    say!(
        "created pipeline {} in {}:",
        scaffold.pipeline,
        scaffold.project.display()
    );
    for f in &scaffold.files {
        say!("  {f}");
    }
    say!("tables: {}", scaffold.tables.join(", "));
    say!("next:");
    say!(
        "  pipeline run {}            load and build the tables",
        scaffold.pipeline
    );
    say!(
        "  pipeline test {}           the model test of the gold SQL",
        scaffold.pipeline
    );
    say!(
        "  pipeline docs {} --out site   a site to browse them",
        scaffold.pipeline
    );
}

/// `pipeline query --out FILE`: what was written where.
pub fn exported(exported: &super::export::Exported, as_json: bool) {
    if as_json {
        return json(exported);
    }
    let rows = match exported.rows {
        1 => "1 row".to_string(),
        n => format!("{n} rows"),
    };
    say!(
        "wrote {rows} to {} ({}, {} bytes)",
        exported.file.display(),
        exported.format,
        exported.bytes
    );
}

/// `pipeline docs`: where the site is and what it holds.
pub fn docs(site: &crate::docs::SiteReport, as_json: bool) {
    if as_json {
        return json(site);
    }
    say!(
        "wrote {} pages ({} tables, {} runs) to {}\nopen {}",
        site.pages,
        site.tables,
        site.runs,
        site.out.display(),
        site.out.join("index.html").display()
    );
}
