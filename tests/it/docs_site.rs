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
