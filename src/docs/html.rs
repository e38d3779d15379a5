//! The page shell every page of the site shares: inline CSS (no network, no CDN), a header
//! with the pipeline's name and links, and HTML escaping.

/// `text` safe inside HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d2330; background: #fafbfc; }
header { background: #1d2330; color: #fff; padding: 10px 24px; display: flex; gap: 24px; align-items: baseline; }
header a { color: #cfe1ff; text-decoration: none; }
header .title { font-weight: 600; font-size: 16px; }
header form.search { margin-left: auto; } header input[type=search] { width: 280px; padding: 4px 8px; border-radius: 4px; border: 0; }
section.column { background: #fff; border: 1px solid #dde2ea; padding: 6px 12px; margin: 8px 0; }
section.column h3 { font-size: 15px; margin: 4px 0; } section.column:target { border-color: #4a78b0; box-shadow: 0 0 0 2px #cfe1ff; }
.description { color: #333b48; } li.hit { margin: 2px 0; }
main { padding: 16px 24px 40px; }
h1 { font-size: 22px; margin: 8px 0 12px; } h2 { font-size: 17px; margin: 24px 0 8px; }
table.grid { border-collapse: collapse; background: #fff; }
table.grid th, table.grid td { border: 1px solid #dde2ea; padding: 4px 10px; text-align: left; vertical-align: top; }
table.grid th { background: #eef2f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #fff; border: 1px solid #dde2ea; padding: 10px; overflow-x: auto; }
.pass { color: #17803d; } .fail { color: #b42318; font-weight: 600; } .muted { color: #69707d; }
svg.dag .node rect { fill: #fff; stroke: #8c95a3; }
svg.dag .node.source rect { fill: #f3f4f6; } svg.dag .node.bronze rect { fill: #f6e7d7; stroke: #b07a48; }
svg.dag .node.silver rect { fill: #eef1f4; stroke: #7d8794; } svg.dag .node.gold rect { fill: #fbf1c7; stroke: #b8962e; }
svg.dag .node.reader rect { fill: #e8f1fb; stroke: #4a78b0; }
svg.dag .label { font-size: 13px; font-weight: 600; fill: #1d2330; } svg.dag .detail { font-size: 11px; fill: #5a6270; }
svg.dag .column-header { font-size: 12px; fill: #5a6270; text-transform: uppercase; letter-spacing: .06em; }
svg.dag .edge { fill: none; stroke: #9aa3b0; stroke-width: 1.4; } svg.dag .arrow { fill: #9aa3b0; }
svg.chart .bar-rows { fill: #6b8fc9; } svg.chart .bar-secs { fill: #d9a441; } svg.chart text { font-size: 11px; fill: #5a6270; }
svg.chart .axis { stroke: #8c95a3; } svg.chart .grid { stroke: #e3e7ee; }
"#;

/// A complete page: `title`, the site header linking home (`root`: the relative path to the
/// site's root folder, "" or "../"), and `body`.
pub fn page(pipeline: &str, title: &str, root: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} · {pipeline}</title><style>{STYLE}</style></head>\n<body><header><span class=\"title\">pipeline {pipeline}</span><a href=\"{root}index.html\">DAG and tables</a><a href=\"{root}runs.html\">runs</a>{search}</header>\n<main>\n{body}\n</main></body></html>\n",
        title = escape(title),
        pipeline = escape(pipeline),
        search = search_box(root),
    )
}

/// The search box every page's header shows; `root` is the path to the site's root.
pub fn search_box(root: &str) -> String {
    format!(
        "<form class=\"search\" action=\"{root}index.html\" method=\"get\"><input type=\"search\" name=\"q\" id=\"q\" placeholder=\"search tables and columns\" aria-label=\"search tables and columns\"></form>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
    }
}
