//! `pipeline docs`: the site is written for the retail sample, then loaded from disk by a real
//! browser (headless Chromium, Debian's `chromium`), whose rendered DOM must show the tables,
//! a lineage edge, a column's sources and the run; a screenshot stays in the test output
//! (target/tmp/docs-site/). Where Chromium is missing the browser part says so and is skipped
//! (`tests/run-all.sh` installs it, so CI runs it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Project;

/// The browser, if installed.
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("which").arg(name).output().ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
}

/// Chromium's headless run over `page` with `args` (a fresh profile each time).
fn headless(browser: &Path, profile: &Path, args: &[&str], page: &Path) -> String {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_docs_site_opens_from_disk_in_a_browser() {
    let p = Project::retail();
    let run = p.json(&["run", "retail"]);
    let run_id = run["run_id"].as_str().unwrap().to_string();
    let report = p.json(&["docs", "retail", "--out", "site"]);
    let site = p.path().join("site");
    assert_eq!(report["tables"], 9, "{report}");
    assert_eq!(report["runs"], 1);

    // Self-contained: no stylesheet, script or image from anywhere (the only URL is the SVG
    // namespace, which is a name, not a fetch).
    let mut pages = vec![site.join("index.html"), site.join("runs.html")];
    for entry in std::fs::read_dir(site.join("tables")).unwrap() {
        pages.push(entry.unwrap().path());
    }
    assert_eq!(pages.len(), 11);
    for page in &pages {
        let html = std::fs::read_to_string(page).unwrap();
        let without_ns = html.replace("http://www.w3.org/2000/svg", "");
        assert!(
            !without_ns.contains("http://") && !without_ns.contains("https://"),
            "{}",
            page.display()
        );
        assert!(
            !html.contains("<link") && !html.contains("src="),
            "{}",
            page.display()
        );
    }

    let Some(browser) = chromium() else {
        eprintln!("SKIPPED the browser part of the docs-site test: chromium is not installed (apt-get install chromium; tests/run-all.sh does)");
        return;
    };
    let profile = p.path().join("chromium-profile");
    let index = headless(
        &browser,
        &profile,
        &["--dump-dom"],
        &site.join("index.html"),
    );
    for table in [
        "bronze.pos_orders",
        "bronze.web_orders",
        "bronze.customers",
        "silver.orders",
        "silver.customers",
        "gold.fact_orders",
        "gold.customer_metrics",
        "gold.monthly_revenue",
        "gold.repeat_buyers",
    ] {
        assert!(
            index.contains(&format!("data-node=\"{table}\"")),
            "{table} not in the DAG"
        );
        assert!(
            index.contains(&format!(">{table}</a>")),
            "{table} not in the table list"
        );
    }
    // Edges of the DAG, as the spec and SQL define them: a source to its bronze table, silver
    // into gold, gold into the declared reader.
    assert!(index.contains(
        "data-from=\"source:sample-data/retail/web/*.jsonl\" data-to=\"bronze.web_orders\""
    ));
    assert!(index.contains("data-from=\"silver.orders\" data-to=\"gold.fact_orders\""));
    assert!(index.contains("data-from=\"silver.customers\" data-to=\"gold.fact_orders\""));
    assert!(index.contains(
        "data-from=\"gold.monthly_revenue\" data-to=\"reader:finance dashboard: monthly revenue\""
    ));
    assert!(!index.contains("data-from=\"bronze.customers\" data-to=\"gold.fact_orders\""));
    // The spec's descriptions: of tables in the list, of columns on the table's page.
    assert!(index.contains(
        "<td class=\"description\">Orders, customers and revenue per month; cancelled orders left out</td>"
    ));

    // A table page: the column's sources (gold_fact_orders.sql: `c.name AS customer_name`).
    let fact = headless(
        &browser,
        &profile,
        &["--dump-dom"],
        &site.join("tables/gold.fact_orders.html"),
    );
    assert!(fact.contains("data-column=\"gold.fact_orders.customer_name\" data-upstream=\"silver.customers.name\""), "{fact}");
    assert!(fact.contains("LEFT JOIN silver.customers"));
    assert!(
        fact.contains(
            "<td class=\"description\">quantity * unit_price, in the order's currency</td>"
        ),
        "{fact}"
    );
    // The run, on the runs page and linked from the table's snapshot.
    let runs = headless(&browser, &profile, &["--dump-dom"], &site.join("runs.html"));
    assert!(
        runs.contains(&format!("<tr id=\"{run_id}\" class=\"run\">")),
        "{runs}"
    );
    assert!(runs.contains(&format!("pipeline rollback {run_id}")));
    assert!(fact.contains(&format!("runs.html#{run_id}")));

    // A screenshot of the DAG stays with the test output.
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("docs-site");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("index.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &profile,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,900",
        ],
        &site.join("index.html"),
    );
    let bytes = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(
        bytes > 10_000,
        "screenshot {} has {bytes} bytes",
        shot.display()
    );
    println!("docs site screenshot: {}", shot.display());
}

/// A page that opens `site_page` in a 1400 px wide frame and writes, as JSON in
/// `<pre id="result">`, the DAG's nodes outside the frame's viewport and the edges that pass
/// through a box (points every 2 px along each path, inside a box other than its own ends).
const LAYOUT_PROBE: &str = r#"<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="SITE_PAGE" style="width:1400px;height:900px;border:0"></iframe>
<pre id="result">not loaded</pre>
<script>
document.getElementById('f').addEventListener('load', () => {
  const doc = document.getElementById('f').contentDocument;
  const vw = doc.documentElement.clientWidth;
  const nodes = [...doc.querySelectorAll('svg.dag [data-node]')];
  const outside = nodes.filter(g => {
    const r = g.querySelector('rect').getBoundingClientRect();
    return r.left < 0 || r.right > vw + 0.5;
  }).map(g => g.dataset.node);
  const boxes = nodes.map(g => {
    const r = g.querySelector('rect');
    return {id: g.dataset.node, x: +r.getAttribute('x'), y: +r.getAttribute('y'),
            w: +r.getAttribute('width'), h: +r.getAttribute('height')};
  });
  const crossing = [];
  for (const p of doc.querySelectorAll('svg.dag path.edge')) {
    const len = p.getTotalLength();
    for (let s = 0; s <= len; s += 2) {
      const pt = p.getPointAtLength(s);
      const hit = boxes.find(b => b.id !== p.dataset.from && b.id !== p.dataset.to &&
        pt.x > b.x + 1 && pt.x < b.x + b.w - 1 && pt.y > b.y + 1 && pt.y < b.y + b.h - 1);
      if (hit) { crossing.push(p.dataset.from + ' to ' + p.dataset.to + ' crosses ' + hit.id); break; }
    }
  }
  const edges = doc.querySelectorAll('svg.dag path.edge').length;
  document.getElementById('result').textContent =
    JSON.stringify({viewport: vw, nodes: nodes.length, edges, outside, crossing});
});
</script></body></html>"#;

/// What [`LAYOUT_PROBE`] finds on `page` (relative to `dir`).
fn layout(browser: &Path, dir: &Path, page: &str) -> serde_json::Value {
    let probe = dir.join("layout-probe.html");
    std::fs::write(&probe, LAYOUT_PROBE.replace("SITE_PAGE", page)).unwrap();
    let dom = headless(
        browser,
        &dir.join("chromium-profile-layout"),
        &[
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ],
        &probe,
    );
    let start = dom.find("<pre id=\"result\">").expect("the probe's result") + 17;
    let text = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Every `href="PAGE#ANCHOR"` of `class` on the pages of `dir` names a page that exists and
/// holds `id="ANCHOR"`; returns how many were checked.
fn links_resolve(dir: &Path, class: &str) -> usize {
    let pattern =
        regex::Regex::new(&format!(r##"<a class="{class}" href="([^"#]+)#([^"]+)">"##)).unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let html = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for link in pattern.captures_iter(&html) {
            let target = std::fs::read_to_string(dir.join(&link[1]))
                .unwrap_or_else(|_| panic!("{} does not exist", &link[1]));
            assert!(
                target.contains(&format!("id=\"{}\"", &link[2])),
                "{}#{} has no such anchor",
                &link[1],
                &link[2]
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn the_docs_site_searches_links_columns_and_fits_its_pictures() {
    let p = Project::retail();
    p.json(&["run", "retail"]);
    p.json(&["docs", "retail", "--out", "site"]);
    let site = p.path().join("site");
    let tables = site.join("tables");

    // Lineage links, both ways, and "used by" resolve to the column's section.
    assert!(links_resolve(&tables, "upstream") >= 20);
    assert!(links_resolve(&tables, "downstream") >= 20);
    let orders = std::fs::read_to_string(tables.join("silver.orders.html")).unwrap();
    assert!(
        orders.contains("<a class=\"used-by\" href=\"gold.fact_orders.html\">gold.fact_orders</a>")
    );
    assert!(orders.contains("<a class=\"downstream\" href=\"gold.fact_orders.html#col-amount\">gold.fact_orders.amount</a>"), "{orders}");
    let revenue = std::fs::read_to_string(tables.join("gold.monthly_revenue.html")).unwrap();
    assert!(revenue.contains("<li class=\"used-by-reader\">finance dashboard: monthly revenue"));
    // Sources are told apart by their folder, not all `*.csv`.
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    for label in [">orders/*.csv<", ">customers/*.csv<", ">web/*.jsonl<"] {
        assert!(index.contains(label), "{label}");
    }

    let Some(browser) = chromium() else {
        eprintln!("SKIPPED the browser part of the docs-site tool test: chromium is not installed (apt-get install chromium; tests/run-all.sh does)");
        return;
    };
    let profile = p.path().join("chromium-profile");
    // Search from disk: by a column's name, and by words of its description only.
    let search = |q: &str| {
        let page = PathBuf::from(format!("{}?q={q}", site.join("index.html").display()));
        let dom = headless(&browser, &profile, &["--dump-dom"], &page);
        let hit = regex::Regex::new(
            r#"<li class="hit" data-kind="(\w+)" data-name="([^"]+)"><a href="([^"]+)">"#,
        )
        .unwrap();
        hit.captures_iter(&dom)
            .map(|c| (c[1].to_string(), c[2].to_string(), c[3].to_string()))
            .collect::<Vec<_>>()
    };
    let by_name = search("amount");
    let names: Vec<&str> = by_name.iter().map(|h| h.1.as_str()).collect();
    assert!(
        names.contains(&"silver.orders.amount") && names.contains(&"gold.fact_orders.amount"),
        "{names:?}"
    );
    let by_words = search("order%27s%20currency");
    assert_eq!(by_words.len(), 1, "{by_words:?}");
    assert_eq!(by_words[0].1, "gold.fact_orders.amount");
    let (page, anchor) = by_words[0].2.split_once('#').unwrap();
    let target = std::fs::read_to_string(site.join(page)).unwrap();
    assert!(target.contains(&format!("<section class=\"column\" id=\"{anchor}\"")));
    let tables_found = search("cancelled%20orders%20left%20out");
    assert_eq!(
        tables_found[0].1, "gold.monthly_revenue",
        "{tables_found:?}"
    );
    assert_eq!(tables_found[0].0, "table");

    // At 1400 px every box of the DAG is in view and no edge passes through a box.
    let seen = layout(&browser, p.path(), "site/index.html");
    assert_eq!(seen["nodes"], 14, "{seen}");
    assert_eq!(seen["outside"], serde_json::json!([]), "{seen}");
    assert_eq!(seen["crossing"], serde_json::json!([]), "{seen}");

    // A small pipeline whose gold table reads bronze directly: that edge skips the silver
    // column, where a box stands in its row.
    let small = Project::empty();
    small.write("data/d.csv", "id,kind\n1,a\n2,b\n");
    small.write(
        "sql/devices/silver.sql",
        "SELECT id, kind FROM bronze.devices",
    );
    small.write("sql/devices/gold.sql", "SELECT d.kind, count(*) AS n FROM bronze.devices d JOIN silver.devices s ON d.id = s.id GROUP BY d.kind");
    small.write(
        "pipelines/devices.toml",
        "[pipeline]\nname = \"devices\"\n\n[[ingest]]\ntable = \"bronze.devices\"\nformat = \"csv\"\npath = \"data/*.csv\"\nschema = { id = \"long\", kind = \"string\" }\n\n[[transform]]\ntable = \"silver.devices\"\nsql = \"sql/devices/silver.sql\"\n\n[[transform]]\ntable = \"gold.kinds\"\nsql = \"sql/devices/gold.sql\"\n",
    );
    small.json(&["docs", "devices", "--out", "site"]);
    let seen = layout(&browser, small.path(), "site/index.html");
    assert_eq!(seen["edges"], 4, "{seen}");
    assert_eq!(seen["crossing"], serde_json::json!([]), "{seen}");
    assert_eq!(seen["outside"], serde_json::json!([]), "{seen}");

    // The runs chart has axes with ticks, the runs' dates, and a legend.
    let runs = headless(&browser, &profile, &["--dump-dom"], &site.join("runs.html"));
    assert!(runs.contains("class=\"tick rows-tick\"") && runs.contains("class=\"tick secs-tick\""));
    assert!(runs.contains("class=\"tick date\""));
    assert!(runs.contains("rows in the run's tables after it (left axis)"));
}
