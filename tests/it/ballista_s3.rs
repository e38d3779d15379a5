//! Transforms on a Ballista cluster over an S3 warehouse (issue 45, step 3): the driver runs
//! the retail pipeline on S3 Tables (moto) with the cluster as its engine; the scheduler and
//! two executors reach S3 with credentials of their own environment, through a proxy that
//! records the access key id signing each request. Every transform runs on the cluster; the
//! tables are those of a run on this machine; every request the nodes make (reads of the
//! inputs and footers, writes of the results) is signed with the nodes' key; neither the
//! driver's secret nor the nodes' appears in any node's log (at debug level, where the
//! scheduler logs every plan it runs) or work folder.

use std::collections::BTreeMap;
use std::path::Path;

use crate::ballista::{engines, Cluster, VOLATILE};
use crate::common::Project;
use crate::remote::{moto, PyServer, REGION, SECRET};
use crate::remote_catalogs::{gold_agrees, GOLD};

const NODE_KEY: &str = "AKIANODEOWNKEY";
const NODE_SECRET: &str = "node-secret-9b2e-never-print";

type Rows = Vec<Vec<Option<String>>>;

/// Every row of every table of `p` (not the run records a remote catalog keeps), volatile
/// columns left out, sorted.
fn all_rows(p: &Project) -> BTreeMap<String, Rows> {
    p.tables()
        .into_iter()
        .filter(|table| !table.starts_with("pipeline_meta."))
        .map(|table| {
            let (columns, rows) = p.query_result(&["query", &format!("SELECT * FROM {table}")]);
            let keep: Vec<usize> = (0..columns.len())
                .filter(|&i| !VOLATILE.contains(&columns[i].as_str()))
                .collect();
            let mut rows: Rows = rows
                .into_iter()
                .map(|r| keep.iter().map(|&i| r[i].clone()).collect())
                .collect();
            rows.sort();
            (table, rows)
        })
        .collect()
}

/// Whether `text` appears in any file under `dir`.
fn found_under(dir: &Path, text: &str) -> Option<String> {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if let Some(found) = found_under(&path, text) {
                return Some(found);
            }
        } else if String::from_utf8_lossy(&std::fs::read(&path).unwrap()).contains(text) {
            return Some(path.display().to_string());
        }
    }
    None
}

#[test]
fn retail_on_a_cluster_over_s3_gives_the_tables_of_a_local_run_signed_by_the_nodes() {
    let s3 = PyServer::start("vending_proxy.py", &["--target", &moto()]);
    let node_env = [
        ("AWS_ACCESS_KEY_ID", NODE_KEY),
        ("AWS_SECRET_ACCESS_KEY", NODE_SECRET),
        ("AWS_REGION", REGION),
        ("PIPELINE_LOG", "debug"),
    ];
    let cluster = Cluster::start_with(2, &["--s3-endpoint", &s3.uri, "--s3-path-style"], &node_env);
    let url = cluster.url();
    let (local, remote) = (Project::retail(), Project::retail().on_s3tables());
    local.json(&["run", "retail"]);
    let report = remote.json(&["run", "retail", "--engine", &url]);
    let ran = engines(&report);
    assert!(ran.len() >= 4, "{report}");
    for (table, engine) in &ran {
        assert_eq!(engine, &format!("ballista at {url}"), "{table}: {report}");
    }
    let (on_cluster, here) = (all_rows(&remote), all_rows(&local));
    assert_eq!(
        on_cluster.keys().collect::<Vec<_>>(),
        here.keys().collect::<Vec<_>>()
    );
    for (table, rows) in &here {
        let differ: Vec<_> = rows
            .iter()
            .zip(&on_cluster[table])
            .filter(|(a, b)| a != b)
            .take(3)
            .collect();
        assert_eq!(on_cluster[table].len(), rows.len(), "{table}");
        assert!(differ.is_empty(), "{table}: {differ:?}");
    }
    gold_agrees(&remote, &remote.pyiceberg_remote(None, &GOLD));

    // The nodes read and wrote S3 themselves, each request signed with their own key.
    let requests = s3.log_lines();
    assert!(
        requests.iter().any(|l| l.starts_with("GET ")),
        "{requests:?}"
    );
    assert!(
        requests.iter().any(|l| l.starts_with("PUT ")),
        "{requests:?}"
    );
    for line in &requests {
        let key = line.split(" key=").nth(1).unwrap_or("").split(' ').next();
        assert_eq!(key, Some(NODE_KEY), "{line}");
    }
    // Nothing secret crossed to the nodes or was logged there.
    for secret in [SECRET, NODE_SECRET] {
        assert_eq!(found_under(cluster.work.path(), secret), None, "{secret}");
    }
    let logged = std::fs::read_to_string(cluster.work.path().join("scheduler.log")).unwrap();
    // At debug level the scheduler logs every plan it runs: the grep above read them.
    assert!(
        logged.contains("PipelineWriteExec") && logged.contains("DataSourceExec"),
        "the scheduler logged the plans it ran"
    );
}
