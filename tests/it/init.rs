//! `pipeline init NAME`: the scaffold runs and tests as written; nothing is overwritten;
//! hostile names are refused; tables another pipeline writes are not taken.

use crate::common::Project;

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_scaffold_runs_and_tests_as_written() {
    let p = Project::empty();
    let made = p.json(&["init", "shop"]);
    assert_eq!(
        made["tables"],
        serde_json::json!(["bronze.orders", "silver.orders", "gold.daily_revenue"])
    );
    p.json(&["validate", "shop"]);
    p.json(&["run", "shop"]);
    // The CSV's paid orders by day: 12.50 + 8.00 on the 5th; 5.25 on the 6th (order 3 was
    // refunded); 14.75 on the 7th.
    assert_eq!(
        p.query("SELECT order_date, orders, revenue FROM gold.daily_revenue ORDER BY order_date"),
        [
            ["2026-01-05", "2", "20.50"],
            ["2026-01-06", "1", "5.25"],
            ["2026-01-07", "1", "14.75"],
        ]
        .map(|r| r.map(|v| Some(v.to_string())).to_vec())
    );
    let tested = p.run(&["test", "shop"]);
    assert!(
        tested.status.success(),
        "{}",
        String::from_utf8_lossy(&tested.stdout)
    );
    let described = p.json(&["describe", "gold.daily_revenue"]);
    assert!(described["description"]
        .as_str()
        .unwrap()
        .contains("refunded orders left out"));

    // Again: refused, and every file as it was.
    let before: Vec<(String, Vec<u8>)> = files_under(p.path())
        .into_iter()
        .filter(|f| !f.starts_with("warehouse"))
        .map(|f| (f.clone(), std::fs::read(p.path().join(&f)).unwrap()))
        .collect();
    let (code, err) = p.fails(&["init", "shop"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("exists") || err.contains("already has"),
        "{err}"
    );
    for (f, bytes) in &before {
        assert_eq!(&std::fs::read(p.path().join(f)).unwrap(), bytes, "{f}");
    }
}

#[test]
fn hostile_names_are_refused_and_taken_tables_are_not_reused() {
    let p = Project::retail();
    for name in ["../evil", "a b", "x;rm", "shop/../../x", ""] {
        let (code, err) = p.fails(&["init", name]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains("not a pipeline name"), "{err}");
    }
    assert!(!p.path().parent().unwrap().join("evil.toml").exists());
    assert!(!p.path().join("pipelines/evil.toml").exists());
    let (code, err) = p.fails(&["init", "retail"]);
    assert_eq!(code, 2, "{err}");

    // retail writes silver.orders: the new pipeline's tables take its name as a prefix, and
    // both pipelines run on the one catalog.
    let made = p.json(&["init", "shop"]);
    assert_eq!(
        made["tables"],
        serde_json::json!([
            "bronze.shop_orders",
            "silver.shop_orders",
            "gold.shop_daily_revenue"
        ])
    );
    p.json(&["run", "retail"]);
    p.json(&["run", "shop"]);
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders")[0][0].as_deref(),
        Some("39")
    );
    assert_eq!(
        p.query("SELECT count(*) FROM silver.shop_orders")[0][0].as_deref(),
        Some("5")
    );
}
