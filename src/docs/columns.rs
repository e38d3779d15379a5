//! A table page's columns, each a section with an anchor of its own (`tables/T.html#col-C`,
//! what search results and lineage links point to): its type and description, the columns it
//! is computed from and the columns computed from it (links), and its whole lineage tree down
//! to the source files' fields. Then the table's readers: the tables computed from it and
//! the declared readers that use it.

use std::fmt::Write;

use super::html::escape;
use super::links::{column_anchor, table_file};
use super::{Site, TablePage};
use crate::lineage::{render, ColumnOrigin, LineageFormat};
use crate::plan::tables_read_by;
use crate::spec::ColumnRef;

/// A link to `column`'s section from a table page (`../` omitted: pages share `tables/`),
/// or its name alone when no table of the site has it.
fn column_link(site: &Site, column: &ColumnRef, class: &str) -> String {
    let name = column.to_string();
    match site.tables.iter().any(|t| t.table == column.table) {
        true => format!(
            "<a class=\"{class}\" href=\"{}#{}\">{}</a>",
            escape(&table_file(&column.table.to_string())),
            column_anchor(&column.column),
            escape(&name)
        ),
        false => format!("<span class=\"{class}\">{}</span>", escape(&name)),
    }
}

/// The columns' sections.
pub fn push_columns(body: &mut String, site: &Site, t: &TablePage) {
    let Some(columns) = site.lineage.tables.get(&t.table) else {
        return;
    };
    body.push_str("<h2>Columns</h2>\n");
    for c in columns {
        let root = ColumnRef::new(&t.table, c);
        let upstream = site.lineage.upstream(&root);
        let downstream = site.lineage.downstream(&root);
        let names: Vec<String> = upstream.iter().map(|u| u.to_string()).collect();
        let _ = writeln!(
            body,
            "<section class=\"column\" id=\"{}\" data-column=\"{}\" data-upstream=\"{}\"><h3>{} <span class=\"muted\">{}</span></h3>",
            column_anchor(c),
            escape(&root.to_string()),
            escape(&names.join(" ")),
            escape(c),
            escape(t.column_type(c))
        );
        if let Some(doc) = t.column_doc(c) {
            let _ = writeln!(body, "<p class=\"description\">{}</p>", escape(doc));
        }
        let _ = writeln!(body, "<p>{}</p>", origin(site, &root, &upstream));
        if !downstream.is_empty() {
            let links: Vec<String> = downstream
                .iter()
                .map(|d| column_link(site, d, "downstream"))
                .collect();
            let _ = writeln!(body, "<p>Used by: {}</p>", links.join(", "));
        }
        let tree = render(
            &site.lineage,
            std::slice::from_ref(&root),
            LineageFormat::Text,
        );
        let _ = writeln!(
            body,
            "<details class=\"lineage\"><summary>lineage down to the source files</summary><pre>{}</pre></details></section>",
            escape(&tree)
        );
    }
}

/// Where the column's values come from, in words, with links to the columns.
fn origin(site: &Site, root: &ColumnRef, upstream: &[ColumnRef]) -> String {
    match site.lineage.origins.get(root) {
        Some(ColumnOrigin::Transform { .. }) if upstream.is_empty() => {
            "Computed from no column (a constant or a count).".into()
        }
        Some(ColumnOrigin::Transform { .. }) => {
            let links: Vec<String> = upstream
                .iter()
                .map(|u| column_link(site, u, "upstream"))
                .collect();
            format!("Computed from: {}", links.join(", "))
        }
        Some(ColumnOrigin::SourceField {
            format,
            paths,
            field,
        }) => format!(
            "Loaded from the field <code>{}</code> of {} ({format}).",
            escape(field),
            escape(&paths.join(", "))
        ),
        Some(ColumnOrigin::Loader { what }) => {
            format!("Filled in by the loader: {}.", escape(what))
        }
        None => String::new(),
    }
}

/// The tables computed from the table and the declared readers that use it.
pub fn push_used_by(body: &mut String, site: &Site, t: &TablePage) {
    body.push_str("<h2>Used by</h2>\n");
    let tables: Vec<String> = site
        .tables
        .iter()
        .filter(|d| d.inputs.contains(&t.name))
        .map(|d| {
            format!(
                "<li><a class=\"used-by\" href=\"{}\">{}</a></li>",
                escape(&table_file(&d.name)),
                escape(&d.name)
            )
        })
        .collect();
    let readers: Vec<String> = site
        .pipeline
        .readers
        .iter()
        .filter(|r| tables_read_by(r).contains(&t.table))
        .map(|r| {
            format!(
                "<li class=\"used-by-reader\">{} <span class=\"muted\">{}{}</span></li>",
                escape(&r.name),
                escape(r.kind.as_deref().unwrap_or("reader")),
                r.owner
                    .as_ref()
                    .map(|o| format!(", owner {}", escape(o)))
                    .unwrap_or_default()
            )
        })
        .collect();
    if tables.is_empty() && readers.is_empty() {
        body.push_str("<p class=\"muted\">No table of this pipeline and no declared reader.</p>\n");
        return;
    }
    let _ = writeln!(body, "<ul>{}{}</ul>", tables.join(""), readers.join(""));
}
