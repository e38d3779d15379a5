//! Search that works from disk (`file://`, no server): every page's header has a search box
//! that opens `index.html?q=WORDS`; the index page holds the search index inline (tables and
//! columns: name, type, description, link) and lists what matches every word, in the name or
//! the description, as the page opens and as one types.

use std::fmt::Write;

use serde::Serialize;

use super::links::{column_anchor, table_file};
use super::Site;

/// One thing search can find.
#[derive(Serialize)]
struct Entry {
    /// `table` or `column`.
    kind: &'static str,
    /// `namespace.table` or `namespace.table.column`.
    name: String,
    #[serde(rename = "type")]
    ty: String,
    description: String,
    /// Relative to the site's root.
    href: String,
}

/// The index of `site`: its tables, then each table's columns.
fn entries(site: &Site) -> Vec<Entry> {
    let mut out = Vec::new();
    for t in &site.tables {
        let page = format!("tables/{}", table_file(&t.name));
        out.push(Entry {
            kind: "table",
            name: t.name.clone(),
            ty: String::new(),
            description: t.docs.description.clone().unwrap_or_default(),
            href: page.clone(),
        });
        for c in site.lineage.tables.get(&t.table).into_iter().flatten() {
            out.push(Entry {
                kind: "column",
                name: format!("{}.{c}", t.name),
                ty: t.column_type(c).to_string(),
                description: t.column_doc(c).unwrap_or_default().to_string(),
                href: format!("{page}#{}", column_anchor(c)),
            });
        }
    }
    out
}

/// The index page's results list and the script that fills it, with the index inline.
pub fn results_section(site: &Site) -> String {
    let index = serde_json::to_string(&entries(site)).unwrap_or_else(|_| "[]".into());
    // Inside <script>, `</` could end the element: written as `<\/` (the same string to JSON).
    let index = index.replace("</", "<\\/");
    let mut out = String::from(
        "<section id=\"search\" hidden><h2>Search results</h2><p id=\"search-summary\" class=\"muted\"></p><ol id=\"search-results\"></ol></section>\n",
    );
    let _ = write!(
        out,
        "<script>\nconst SEARCH_INDEX = {index};\n{SCRIPT}</script>\n"
    );
    out
}

/// Matches every word of the query (case-insensitive) in an entry's name or description;
/// tables first, then by name. Renders with DOM calls (no HTML from the index is parsed).
const SCRIPT: &str = r#"
function runSearch(query) {
  const words = query.toLowerCase().split(/\s+/).filter(w => w.length > 0);
  const section = document.getElementById('search');
  const list = document.getElementById('search-results');
  list.replaceChildren();
  if (words.length === 0) { section.hidden = true; return; }
  const hits = SEARCH_INDEX.filter(e => {
    const text = (e.name + ' ' + e.description).toLowerCase();
    return words.every(w => text.includes(w));
  }).sort((a, b) => (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === 'table' ? -1 : 1));
  for (const e of hits) {
    const li = document.createElement('li');
    li.className = 'hit';
    li.dataset.kind = e.kind;
    li.dataset.name = e.name;
    const a = document.createElement('a');
    a.href = e.href;
    a.textContent = e.name;
    li.append(a);
    const meta = [e.kind, e.type].filter(x => x).join(', ');
    li.append(' (' + meta + ')');
    if (e.description) {
      const d = document.createElement('span');
      d.className = 'description';
      d.textContent = ': ' + e.description;
      li.append(d);
    }
    list.append(li);
  }
  document.getElementById('search-summary').textContent =
    hits.length + (hits.length === 1 ? ' match' : ' matches') + ' for "' + query + '"';
  section.hidden = false;
}
const box = document.getElementById('q');
const asked = new URLSearchParams(location.search).get('q') || '';
if (box) {
  box.value = asked;
  box.addEventListener('input', () => runSearch(box.value));
  box.form.addEventListener('submit', ev => { ev.preventDefault(); runSearch(box.value); });
}
runSearch(asked);
"#;
