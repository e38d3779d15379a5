//! Schema evolution by field id: bronze tables add the columns new source files bring
//! (`schema_evolution = "add_columns"`) and apply safe widenings; an undeclared column under
//! the default policy and an unsafe type change stop the run naming file and line; rows
//! loaded before read NULL / their widened values, in the engine, PyIceberg and DuckDB.

use crate::common::Project;

fn spec(items_schema: &str, items_policy: &str) -> String {
    format!(
        "[pipeline]\nname = \"ev\"\n\n\
         [[ingest]]\ntable = \"bronze.items\"\nformat = \"csv\"\npath = \"data/*.csv\"\n\
         {items_policy}\nschema = {{ {items_schema} }}\n\n\
         [[ingest]]\ntable = \"bronze.events\"\nformat = \"json\"\npath = \"data/*.jsonl\"\n\
         schema_evolution = \"add_columns\"\nschema = {{ id = \"long\" }}\n\n\
         [[transform]]\ntable = \"silver.items\"\nsql = \"sql/items.sql\"\n"
    )
}

fn field_ids(p: &Project, table: &str) -> Vec<(String, i64, String)> {
    p.json(&["describe", table])["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["id"].as_i64().unwrap(),
                c["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn bronze_adds_new_columns_and_widens_types_by_field_id() {
    let p = Project::empty();
    let narrow = "id = \"int\", qty = \"int\", price = \"decimal(6,2)\"";
    p.write("pipelines/ev.toml", &spec(narrow, ""));
    p.write("sql/items.sql", "SELECT * FROM bronze.items\n");
    p.write("data/a.csv", "id,qty,price\n1,2,1.50\n2,3,2.25\n");
    p.write("data/e1.jsonl", "{\"id\": 1}\n");
    p.json(&["run", "ev"]);
    let first = p.current_snapshot("bronze.items");
    let before = field_ids(&p, "bronze.items");
    let silver_before = field_ids(&p, "silver.items");

    // Default policy: a column the schema does not declare stops the run; nothing publishes.
    p.write("data/b.csv", "id,qty,price,color\n3,4,10000.00,red\n");
    let (code, err) = p.fails(&["run", "ev"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("data/b.csv: line 1: column `color` is not in the schema of bronze.items")
            && err.contains("pipelines/ev.toml:5")
            && err.contains("schema_evolution = \"add_columns\""),
        "{err}"
    );
    assert_eq!(p.current_snapshot("bronze.items"), first);

    // add_columns, and two safe widenings: int -> long, decimal(6,2) -> decimal(9,2) (the
    // new row's 1000.00 does not fit decimal(6,2)).
    let wide = "id = \"long\", qty = \"int\", price = \"decimal(9,2)\"";
    p.write(
        "pipelines/ev.toml",
        &spec(wide, "schema_evolution = \"add_columns\""),
    );
    p.write(
        "data/e2.jsonl",
        "{\"id\": 2, \"note\": \"hi\", \"n\": 5, \"obj\": {\"a\": 1}}\n",
    );
    let report = p.json(&["run", "ev"]);
    let actions: Vec<String> = report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            format!(
                "{} {}",
                j["table"].as_str().unwrap(),
                j["action"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        actions.contains(&"bronze.items append; columns added: color".to_string())
            && actions.contains(&"bronze.events append; columns added: n, note, obj".to_string()),
        "{actions:?}"
    );

    // Field ids: kept for every old column (widened in place), new ids for the new one.
    let after = field_ids(&p, "bronze.items");
    let id_of = |cols: &[(String, i64, String)], name: &str| {
        cols.iter()
            .find(|c| c.0 == name)
            .map(|c| (c.1, c.2.clone()))
    };
    assert_eq!(
        id_of(&after, "id"),
        Some((id_of(&before, "id").unwrap().0, "long".into()))
    );
    assert_eq!(
        id_of(&after, "price"),
        Some((id_of(&before, "price").unwrap().0, "decimal(9, 2)".into()))
    );
    let max_before = before.iter().map(|c| c.1).max().unwrap();
    assert_eq!(
        id_of(&after, "color"),
        Some((max_before + 1, "string".into()))
    );

    // The transform reading it (SELECT *) widens and adds the same way, by field id.
    let silver_after = field_ids(&p, "silver.items");
    assert_eq!(
        id_of(&silver_after, "id"),
        Some((id_of(&silver_before, "id").unwrap().0, "long".into()))
    );
    assert!(
        id_of(&silver_after, "color").unwrap().0 > silver_before.iter().map(|c| c.1).max().unwrap()
    );

    // Old rows read NULL for the new column and their widened values.
    assert_eq!(
        p.query("SELECT id, qty, price, color FROM silver.items ORDER BY id"),
        vec![
            vec![
                Some("1".into()),
                Some("2".into()),
                Some("1.50".into()),
                None
            ],
            vec![
                Some("2".into()),
                Some("3".into()),
                Some("2.25".into()),
                None
            ],
            vec![
                Some("3".into()),
                Some("4".into()),
                Some("10000.00".into()),
                Some("red".into())
            ],
        ]
    );
    // JSON values of added columns: strings as they are, anything else as its JSON text.
    assert_eq!(
        p.query("SELECT id, n, note, obj FROM bronze.events ORDER BY id"),
        vec![
            vec![Some("1".into()), None, None, None],
            vec![
                Some("2".into()),
                Some("5".into()),
                Some("hi".into()),
                Some("{\"a\": 1}".into())
            ],
        ]
    );
    // Time travel reads the old schema.
    let (_, old) = p.query_result(&[
        "query",
        "SELECT * FROM bronze.items",
        "--as-of",
        &first.to_string(),
    ]);
    assert_eq!(old.len(), 2);
    assert_eq!(old[0].len(), 7, "id, qty, price and 4 lineage columns");

    // Independent readers agree: sums over the widened columns span old and new files.
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        let r = &readers["bronze.items"][reader];
        assert_eq!(r["rows"].as_u64(), Some(3), "{reader}");
        assert_eq!(r["sums"]["id"].as_str(), Some("6"), "{reader}");
        assert_eq!(r["sums"]["price"].as_str(), Some("10003.75"), "{reader}");
    }

    // A column added once stays, whatever the policy later says.
    p.write("pipelines/ev.toml", &spec(wide, ""));
    p.write("data/c.csv", "id,qty,price,color\n4,1,1.00,blue\n");
    p.json(&["run", "ev"]);
    assert_eq!(
        p.query("SELECT color FROM bronze.items WHERE id = 4"),
        vec![vec![Some("blue".into())]]
    );

    // An unsafe change (int -> string) fails naming the column, the types and the spec line.
    let unsafe_schema = "id = \"long\", qty = \"string\", price = \"decimal(9,2)\"";
    p.write("pipelines/ev.toml", &spec(unsafe_schema, ""));
    p.write("data/d.csv", "id,qty,price\n5,1,1.00\n");
    let (_, err) = p.fails(&["run", "ev"]);
    assert!(
        err.contains(
            "column `qty` is int in the table but string in the spec (pipelines/ev.toml:5)"
        ) && err.contains("not a safe widening"),
        "{err}"
    );

    // "ignore" loads the file without the undeclared column.
    let ignoring = "id = \"long\", qty = \"int\", price = \"decimal(9,2)\"";
    p.write(
        "pipelines/ev.toml",
        &spec(ignoring, "schema_evolution = \"ignore\""),
    );
    p.write("data/d.csv", "id,qty,price,size\n5,1,1.00,XL\n");
    p.json(&["run", "ev"]);
    assert_eq!(
        p.query("SELECT count(*) FROM bronze.items"),
        vec![vec![Some("5".into())]]
    );
    assert!(field_ids(&p, "bronze.items").iter().all(|c| c.0 != "size"));
}

#[test]
fn headerless_files_and_new_not_null_columns_keep_earlier_rows_readable() {
    let p = Project::empty();
    let spec = |schema: &str| {
        format!(
            "[pipeline]\nname = \"h\"\n\n[[ingest]]\ntable = \"bronze.h\"\nformat = \"csv\"\n\
             path = \"data/*.csv\"\nheader = false\nschema = {{ {schema} }}\n"
        )
    };
    p.write(
        "pipelines/h.toml",
        &spec("a = \"long\", b = \"long\", c = \"long\""),
    );
    p.write("data/1.csv", "1,2,3\n");
    p.json(&["run", "h"]);
    // The feed drops `c`: the table keeps it (old rows keep their values), new rows read NULL,
    // and `b` is still read from the second field.
    p.write("pipelines/h.toml", &spec("a = \"long\", b = \"long\""));
    p.write("data/2.csv", "4,5\n");
    p.json(&["run", "h"]);
    assert_eq!(
        p.query("SELECT a, b, c FROM bronze.h ORDER BY a"),
        vec![
            vec![Some("1".into()), Some("2".into()), Some("3".into())],
            vec![Some("4".into()), Some("5".into()), None],
        ]
    );
    // A new `not null` column: enforced on new rows, optional in the table (old rows have no
    // value).
    p.write(
        "pipelines/h.toml",
        &spec("a = \"long\", b = \"long\", d = \"long not null\""),
    );
    p.write("data/3.csv", "6,7,8\n");
    p.json(&["run", "h"]);
    let d = p.json(&["describe", "bronze.h"])["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "d")
        .cloned()
        .unwrap();
    assert_eq!(d["required"], false);
    assert_eq!(
        p.query("SELECT a, d FROM bronze.h ORDER BY a"),
        vec![
            vec![Some("1".into()), None],
            vec![Some("4".into()), None],
            vec![Some("6".into()), Some("8".into())],
        ]
    );
    let readers = p.independent_readers();
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(
            readers["bronze.h"][reader]["rows"].as_u64(),
            Some(3),
            "{reader}"
        );
        assert_eq!(
            readers["bronze.h"][reader]["sums"]["d"].as_str(),
            Some("8"),
            "{reader}"
        );
    }
}
