//! How far `pipeline erase` reaches beyond the tables that name the subject's column:
//! quarantined raw lines (CSV and JSON), totals computed from erased tables (recomputed in the
//! same publish), landing files (named in the receipt; rewritten with `--rewrite-sources`,
//! without a later run loading them again), and tables holding the subject under another
//! name (column lineage, or the spec's `erase` key).
//!
//! Two landing files are added to the retail sample: a POS file with a bad and a good line of
//! customer 5 and a bad and a good line of customer 6, and a JSON file with a bad line of
//! customer 5 and one of customer 7. The sample's own files hold five more records of
//! customer 5 (two in customers.csv, one each in two POS files, one bad line in
//! web_2026-03.jsonl).

use std::collections::BTreeMap;

use crate::common::Project;

const POS_FILE: &str = "sample-data/retail/orders/pos_2026-03-20.csv";
const WEB_FILE: &str = "sample-data/retail/web/web_2026-03b.jsonl";

/// The retail sample with the two extra landing files.
pub fn project() -> Project {
    let p = Project::retail();
    p.write(
        POS_FILE,
        "order_id,customer_id,order_ts,product,quantity,unit_price,status\n\
         1101,5,2026-03-20 10:00:00,Dana Widget,three,5.00,placed\n\
         1102,6,2026-03-20 11:00:00,Tea,x,4.50,placed\n\
         1103,5,2026-03-20 12:00:00,Dana Widget,1,5.00,placed\n\
         1104,6,2026-03-20 13:00:00,Tea,1,4.50,placed\n",
    );
    p.write(
        WEB_FILE,
        "{\"order_id\": 2101, \"customer_id\": 5, \"order_ts\": \"2026-03-21T10:00:00\", \"product\": \"Dana Widget\", \"quantity\": \"lots\", \"unit_price\": 5, \"status\": \"placed\"}\n\
         {\"order_id\": 2102, \"customer_id\": 7, \"order_ts\": \"2026-03-21T11:00:00\", \"product\": \"Tea\", \"quantity\": \"many\", \"unit_price\": 4.5, \"status\": \"placed\"}\n",
    );
    p
}

fn count(p: &Project, sql: &str) -> u64 {
    p.query(sql)[0][0].as_deref().unwrap().parse().unwrap()
}

/// The records of a landing file with their customer id (as text): CSV by its header, JSON
/// Lines by key; each record as its fields joined (CSV) or its line (JSON).
fn records(path: &std::path::Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().is_some_and(|e| e == "jsonl") {
        return text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let id = serde_json::from_str::<serde_json::Value>(l)
                    .ok()
                    .and_then(|v| v.get("customer_id").map(|c| c.to_string()))
                    .unwrap_or_default();
                (id, l.to_string())
            })
            .collect();
    }
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let at = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "customer_id")
        .unwrap();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (
                r.get(at).unwrap_or("").trim().to_string(),
                r.iter().collect::<Vec<_>>().join("|"),
            )
        })
        .collect()
}

#[test]
fn erase_reaches_quarantined_lines_totals_and_landing_files() {
    let p = project();
    p.json(&["run", "retail"]);
    let originals: BTreeMap<String, Vec<(String, String)>> = [
        "sample-data/retail/customers/customers.csv",
        "sample-data/retail/orders/pos_2026-01-15.csv",
        "sample-data/retail/orders/pos_2026-02-10.csv",
        "sample-data/retail/orders/pos_2026-03-05.csv",
        POS_FILE,
        "sample-data/retail/web/web_2026-02.jsonl",
        "sample-data/retail/web/web_2026-03.jsonl",
        WEB_FILE,
    ]
    .iter()
    .map(|f| (f.to_string(), records(&p.path().join(f))))
    .collect();
    // Quarantined lines of customer 5, found by hand in the files: POS_FILE line 2, WEB_FILE
    // line 1, web_2026-03.jsonl line 2. Other customers' bad lines stay.
    let quarantined = |table: &str| {
        let mut rows = p.query(&format!(
            "SELECT source_file, line FROM bronze.{table}__quarantine ORDER BY source_file, line"
        ));
        rows.sort();
        rows
    };
    let pos_bad = quarantined("pos_orders");
    let web_bad = quarantined("web_orders");
    let line = |f: &str, n: &str| vec![Some(f.to_string()), Some(n.to_string())];
    assert!(pos_bad.contains(&line(POS_FILE, "2")));
    assert!(web_bad.contains(&line(WEB_FILE, "1")));
    assert!(web_bad.contains(&line("sample-data/retail/web/web_2026-03.jsonl", "2")));
    // Customer 5's non-cancelled revenue per month, before: what monthly_revenue must lose.
    let revenue = |sql: &str| -> BTreeMap<String, (u64, u64, f64)> {
        p.query(sql)
            .into_iter()
            .map(|r| {
                let v = |i: usize| r[i].clone().unwrap_or_default();
                (
                    v(0),
                    (
                        v(1).parse().unwrap(),
                        v(2).parse().unwrap(),
                        v(3).parse().unwrap(),
                    ),
                )
            })
            .collect()
    };
    let monthly =
        "SELECT CAST(month AS VARCHAR), orders, customers, revenue FROM gold.monthly_revenue";
    let before = revenue(monthly);
    let theirs = revenue(
        "SELECT CAST(CAST(date_trunc('month', order_date) AS DATE) AS VARCHAR), count(*), 1, sum(amount) \
         FROM gold.fact_orders WHERE customer_id = 5 AND status <> 'cancelled' GROUP BY 1",
    );
    assert_eq!(
        theirs.len(),
        2,
        "customer 5 bought in January and March: {theirs:?}"
    );
    let repeat_before = p.query("SELECT * FROM gold.repeat_buyers ORDER BY buyer_type");

    let done = p.json(&[
        "erase",
        "retail",
        "--where",
        "customer_id = 5",
        "--reason",
        "GDPR-119",
        "--rewrite-sources",
    ])["erase"]
        .clone();
    let record = &done["record"];
    assert_eq!(record["kind"], "erase");

    // Quarantine: exactly customer 5's lines are gone.
    let after_pos = quarantined("pos_orders");
    let after_web = quarantined("web_orders");
    let without = |rows: &[Vec<Option<String>>], gone: &[Vec<Option<String>>]| -> Vec<_> {
        rows.iter().filter(|r| !gone.contains(r)).cloned().collect()
    };
    assert_eq!(after_pos, without(&pos_bad, &[line(POS_FILE, "2")]));
    assert_eq!(
        after_web,
        without(
            &web_bad,
            &[
                line(WEB_FILE, "1"),
                line("sample-data/retail/web/web_2026-03.jsonl", "2")
            ]
        )
    );

    // Totals without the subject's column: recomputed in the same publish, each month
    // short by exactly customer 5's orders and revenue.
    let after = revenue(monthly);
    for (month, (orders, customers, total)) in &before {
        let (o, c, t) = theirs.get(month).copied().unwrap_or((0, 0, 0.0));
        let now = after[month];
        assert_eq!((now.0, now.1), (orders - o, customers - c), "{month}");
        assert!((now.2 - (total - t)).abs() < 0.005, "{month}: {now:?}");
    }
    let recomputed: Vec<&str> = done["recomputed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(recomputed, ["gold.monthly_revenue", "gold.repeat_buyers"]);
    // The months whose files were rewritten: January and March of silver.orders (customer
    // 5's February order was cancelled but is still a row: February too).
    let months = |table: &str| -> Vec<String> {
        done["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == table)
            .unwrap()["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        months("silver.orders"),
        [
            "order_date_month=2026-01",
            "order_date_month=2026-02",
            "order_date_month=2026-03"
        ]
    );
    assert_eq!(months("silver.customers"), Vec::<String>::new());
    let run_id = record["run_id"].as_str().unwrap();
    for table in recomputed {
        let history = p.json(&["history", table]);
        assert_eq!(
            history.as_array().unwrap().last().unwrap()["run_id"],
            run_id
        );
    }
    // repeat_buyers, recomputed, agrees with the (erased) customer_metrics it comes from.
    let repeat_after = p.query("SELECT * FROM gold.repeat_buyers ORDER BY buyer_type");
    assert_ne!(repeat_after, repeat_before);
    assert_eq!(
        repeat_after,
        p.query(
            "SELECT CASE WHEN orders >= 2 THEN 'repeat' ELSE 'one-time' END AS buyer_type, \
             count(*), sum(total_spend) FROM gold.customer_metrics GROUP BY 1 ORDER BY 1"
        )
    );

    // The receipt names every landing file that held their records, with the counts found by
    // hand; each was rewritten without exactly those records, every other record kept.
    let sources: BTreeMap<String, (u64, bool)> = done["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_string(),
                (s["records"].as_u64().unwrap(), s["rewritten"] == true),
            )
        })
        .collect();
    let expected: BTreeMap<String, (u64, bool)> = [
        ("sample-data/retail/customers/customers.csv", 2),
        ("sample-data/retail/orders/pos_2026-01-15.csv", 1),
        ("sample-data/retail/orders/pos_2026-02-10.csv", 1),
        (POS_FILE, 2),
        ("sample-data/retail/web/web_2026-03.jsonl", 1),
        (WEB_FILE, 1),
    ]
    .into_iter()
    .map(|(f, n)| (f.to_string(), (n, true)))
    .collect();
    assert_eq!(sources, expected);
    for (file, records_before) in &originals {
        let now = records(&p.path().join(file));
        let kept: Vec<_> = records_before
            .iter()
            .filter(|(id, _)| id != "5")
            .cloned()
            .collect();
        assert_eq!(now, kept, "{file}");
    }
    // No leftover of the rewrite next to the files.
    for dir in ["orders", "web", "customers"] {
        for entry in std::fs::read_dir(p.path().join("sample-data/retail").join(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().to_string();
            assert!(!name.contains(".erase-"), "{name}");
        }
    }

    // The next runs take the rewritten files as loaded: nothing is loaded again (not even
    // with --reload-changed), and nothing of customer 5 comes back.
    for args in [
        &["run", "retail"][..],
        &["run", "retail", "--reload-changed"],
    ] {
        let report = p.json(args);
        for job in report["jobs"].as_array().unwrap() {
            if job["job"] == "ingest" {
                assert_eq!(job["rows_out"], 0, "{args:?}: {job}");
            }
        }
        for table in [
            "bronze.pos_orders",
            "bronze.customers",
            "silver.orders",
            "gold.fact_orders",
        ] {
            assert_eq!(
                count(
                    &p,
                    &format!("SELECT count(*) FROM {table} WHERE customer_id = 5")
                ),
                0,
                "{args:?}: {table}"
            );
        }
        assert_eq!(quarantined("pos_orders"), after_pos);
        assert_eq!(quarantined("web_orders"), after_web);
        assert_eq!(revenue(monthly), after);
    }
}

#[test]
fn a_subject_column_under_another_name_is_found_by_lineage_or_the_erase_key() {
    let p = Project::retail();
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    // gold.buyers passes customer_id through as buyer_id (lineage finds it); gold.refs
    // computes its key (no lineage can tell), so its `erase` key says which column it is.
    p.write(
        "pipelines/retail.toml",
        &format!(
            "{spec}\n[[transform]]\ntable = \"gold.buyers\"\nsql = \"sql/retail/gold_buyers.sql\"\n\
             \n[[transform]]\ntable = \"gold.refs\"\nsql = \"sql/retail/gold_refs.sql\"\n\
             erase = {{ customer_id = \"ref\" }}\n"
        ),
    );
    p.write(
        "sql/retail/gold_buyers.sql",
        "SELECT customer_id AS buyer_id, count(*) AS orders FROM silver.orders GROUP BY customer_id\n",
    );
    p.write(
        "sql/retail/gold_refs.sql",
        "SELECT customer_id + 0 AS ref, country FROM silver.customers\n",
    );
    p.json(&["run", "retail"]);
    let plan =
        p.json(&["erase", "retail", "--where", "customer_id = 5", "--plan"])["erase"].clone();
    let planned: BTreeMap<String, (String, u64)> = plan["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["table"].as_str().unwrap().to_string(),
                (
                    t["condition"].as_str().unwrap().to_string(),
                    t["rows"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(planned["gold.buyers"], ("buyer_id = 5".to_string(), 1));
    assert_eq!(planned["gold.refs"], ("ref = 5".to_string(), 1));
    let others = |table: &str, column: &str| {
        p.query(&format!(
            "SELECT * FROM {table} WHERE {column} <> 5 ORDER BY {column}"
        ))
    };
    let buyers = others("gold.buyers", "buyer_id");
    let refs = others("gold.refs", "ref");
    p.json(&[
        "erase",
        "retail",
        "--where",
        "customer_id = 5",
        "--reason",
        "GDPR-120",
    ]);
    assert_eq!(
        count(&p, "SELECT count(*) FROM gold.buyers WHERE buyer_id = 5"),
        0
    );
    assert_eq!(count(&p, "SELECT count(*) FROM gold.refs WHERE ref = 5"), 0);
    assert_eq!(others("gold.buyers", "buyer_id"), buyers);
    assert_eq!(others("gold.refs", "ref"), refs);

    // An `erase` key naming a column the table does not have is refused, naming both.
    let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
    p.write(
        "pipelines/retail.toml",
        &spec.replace(
            "erase = { customer_id = \"ref\" }",
            "erase = { customer_id = \"reff\" }",
        ),
    );
    let (code, err) = p.fails(&["erase", "retail", "--where", "customer_id = 5", "--plan"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("gold.refs") && err.contains("reff"), "{err}");
}

#[test]
fn quarantined_lines_that_cannot_be_read_are_listed_by_file_and_line() {
    let p = project();
    // A JSON line cut short after the subject's id, and a customer line whose id is no
    // number but which holds the subject's name and e-mail.
    let web = std::fs::read_to_string(p.path().join(WEB_FILE)).unwrap();
    p.write(
        WEB_FILE,
        &format!("{web}{{\"order_id\": 2103, \"customer_id\": 5, \"product\": \"Dana Wid\n"),
    );
    p.write(
        "sample-data/retail/customers/late.csv",
        "customer_id,name,email,country,updated_at\nC-5,Dana Weiss,dana.weiss@example.com,DE,2026-03-01 00:00:00\n",
    );
    p.json(&["run", "retail"]);
    let plan = p.json(&["erase", "retail", "--where", "customer_id = 5", "--plan"]);
    let listed: Vec<&str> = plan["erase"]["not_searched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let web_line = listed
        .iter()
        .find(|l| l.starts_with("bronze.web_orders__quarantine"))
        .unwrap_or_else(|| panic!("the cut JSON line is not listed: {listed:?}"));
    assert!(web_line.contains("not a JSON object"), "{web_line}");
    assert!(
        web_line.contains(&format!("{WEB_FILE} (line 3)")),
        "{web_line}"
    );
    let customer_line = listed
        .iter()
        .find(|l| l.starts_with("bronze.customers__quarantine"))
        .unwrap_or_else(|| panic!("the C-5 line is not listed: {listed:?}"));
    assert!(
        customer_line.contains("`customer_id` does not read as"),
        "{customer_line}"
    );
    assert!(
        customer_line.contains("sample-data/retail/customers/late.csv (line 2)"),
        "{customer_line}"
    );
    // The receipt never holds an erased value.
    for line in &listed {
        assert!(!line.contains("Dana"), "{line}");
    }
}
