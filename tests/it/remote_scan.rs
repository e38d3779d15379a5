//! The native parallel Parquet scan on S3 warehouses (moto): tables on S3 Tables and on a REST
//! catalog over S3 are read by DataFusion's Parquet source through each table's own FileIO,
//! with the rows PyIceberg reads; a data file deleted behind the catalog's back fails the query
//! with an error naming the file, as on local files.

use crate::common::{python, Project};
use crate::parquet_scan::plan;
use crate::remote::{
    moto, storage_settings, table_bucket, PyServer, Rustberg, KEY, REGION, SECRET,
};
use crate::remote_catalogs::{gold_agrees, GOLD};

/// Every gold table and `silver.orders` is read by DataFusion's Parquet source from the
/// table's object store, not by iceberg's one-partition reader.
fn read_natively(p: &Project) {
    for table in GOLD.iter().chain(&["silver.orders"]) {
        let explain = plan(p, &format!("SELECT * FROM {table}"));
        assert!(explain.contains("DataSourceExec"), "{table}: {explain}");
        assert!(!explain.contains("IcebergTableScan"), "{table}: {explain}");
    }
}

#[test]
fn s3tables_tables_are_read_natively_with_the_rows_pyiceberg_reads() {
    let p = Project::retail().on_s3tables();
    p.json(&["run", "retail"]);
    read_natively(&p);
    gold_agrees(&p, &p.pyiceberg_remote(None, &GOLD));
}

/// Deletes `file` (`s3://BUCKET/KEY`) from moto's S3 behind the catalog's back, or with
/// `keep` bytes writes it again cut to that many bytes.
fn tamper(file: &str, keep: Option<usize>) {
    let (bucket, key) = file
        .strip_prefix("s3://")
        .and_then(|k| k.split_once('/'))
        .expect("a file on S3");
    let action = match keep {
        None => format!(
            "s3.delete_object(Bucket='{bucket}', Key='{key}')\n\
             assert 'Contents' not in s3.list_objects_v2(Bucket='{bucket}', Prefix='{key}')"
        ),
        Some(n) => format!(
            "body = s3.get_object(Bucket='{bucket}', Key='{key}')['Body'].read()\n\
             s3.put_object(Bucket='{bucket}', Key='{key}', Body=body[:{n}])"
        ),
    };
    python(&format!(
        "import boto3\n\
         s3 = boto3.client('s3', endpoint_url='{}', region_name='{REGION}',\n\
             aws_access_key_id='{KEY}', aws_secret_access_key='{SECRET}')\n{action}\n",
        moto()
    ));
}

#[test]
fn a_file_deleted_or_cut_behind_a_rest_catalog_s_back_is_named() {
    let server = Rustberg::start();
    let p = Project::retail().on_rest(&server, true);
    p.json(&["run", "retail"]);
    read_natively(&p);
    gold_agrees(&p, &p.pyiceberg_remote(Some(&server), &GOLD));

    let path = |table: &str| {
        p.json(&["files", table])[0]["path"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (deleted, cut) = (path("silver.orders"), path("gold.fact_orders"));
    let size = p.json(&["files", "gold.fact_orders"])[0]["bytes"]
        .as_u64()
        .unwrap();
    tamper(&deleted, None);
    tamper(&cut, Some(200));
    let (code, message) = p.fails(&["query", "SELECT sum(amount) FROM silver.orders"]);
    assert_eq!(code, 5, "a file that cannot be read is damage: {message}");
    assert!(
        message.contains(&format!("{deleted}: no such file")),
        "{message}"
    );
    assert!(message.contains("`pipeline check`"), "{message}");
    let (code, message) = p.fails(&["query", "SELECT sum(amount) FROM gold.fact_orders"]);
    assert_eq!(code, 5, "{message}");
    let said = format!("{cut}: 200 bytes, the table's metadata records {size}");
    assert!(message.contains(&said), "{message}");
    // The other tables are still read, natively.
    let explain = plan(&p, "SELECT * FROM gold.customer_metrics");
    assert!(explain.contains("DataSourceExec"), "{explain}");
}

/// The S3 requests (method and path) logged by `s3` from line `from` on that name a Parquet
/// file.
fn parquet_requests(s3: &PyServer, from: usize) -> Vec<String> {
    s3.log_lines()[from..]
        .iter()
        .filter(|l| l.split(' ').nth(1).is_some_and(|p| p.ends_with(".parquet")))
        .cloned()
        .collect()
}

/// A file no larger than the tail a scan reads first (1 MiB) is read in one request: its
/// footer, page index and column chunks all come from that read (DataFusion's own reader asks
/// three times). Counted by a recording proxy in front of moto's S3.
#[test]
fn a_small_file_on_s3_is_read_in_one_request() {
    let s3 = PyServer::start("vending_proxy.py", &["--target", &moto()]);
    let section = format!(
        "\n[catalogs.remote]\ntype = \"s3tables\"\ntable_bucket_arn = \"{}\"\n\
         endpoint_url = \"{}\"\n{}",
        table_bucket(),
        moto(),
        storage_settings().replace(&moto(), &s3.uri)
    );
    let p = Project::retail().on_catalog_section(&section);
    p.json(&["run", "retail"]);
    let files = p.json(&["files", "silver.orders"]);
    let files = files.as_array().unwrap();
    assert!(files.len() >= 3, "{files:?}");
    for f in files {
        assert!(f["bytes"].as_u64().unwrap() < 1024 * 1024, "{f}");
    }
    let from = s3.log_lines().len();
    let rows = p.query("SELECT count(*), sum(amount) FROM silver.orders");
    assert_eq!(rows[0][0].as_deref(), Some("39"), "{rows:?}");
    let reads = parquet_requests(&s3, from);
    assert_eq!(reads.len(), files.len(), "{reads:#?}");
    assert!(reads.iter().all(|r| r.starts_with("GET ")), "{reads:#?}");
}
