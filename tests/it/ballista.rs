//! Transforms on a real Apache DataFusion Ballista cluster: Ballista's scheduler and two
//! executors (`pipeline scheduler`, `pipeline executor`: Ballista's own libraries with the
//! engine's codecs) on 127.0.0.1, stopped by PID when the test ends. The same retail spec run
//! on the cluster must give, row for row as PyIceberg reads them, the tables a local run
//! gives, through a run, a backfill and a rollback; `drop` expectations and parallel writers
//! too. An executor killed in the middle of a transform: the run recovers, and the lost
//! attempt's files are never committed; the scheduler killed: the run fails and publishes
//! nothing. A table the cluster cannot read as Iceberg would (a renamed
//! column) is read on this machine instead, with a warning.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{repo, Project};

/// Columns that differ between two projects or runs by nature (paths, times, run ids).
pub(crate) const VOLATILE: [&str; 6] = [
    "_source_file",
    "_ingested_at",
    "_run_id",
    "source_file",
    "_dropped_in_run",
    "_expectation_run",
];

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A scheduler and its executors, killed when dropped. Each process logs to a file of its
/// own in the cluster's work folder (`scheduler.log`, `executor-PORT.log`).
pub(crate) struct Cluster {
    scheduler: Child,
    executors: Vec<Child>,
    port: u16,
    pub(crate) work: tempfile::TempDir,
    /// Arguments and environment every process of the cluster is started with.
    node_args: Vec<String>,
    node_env: Vec<(String, String)>,
}

/// Where a cluster process logs: a new file in `dir`.
fn log_file(dir: &std::path::Path, name: &str) -> Stdio {
    Stdio::from(std::fs::File::create(dir.join(name)).unwrap())
}

impl Cluster {
    /// A scheduler that takes an executor silent for 4 s as lost, with `executors` executors
    /// (two task slots each, heartbeats every second).
    fn start(executors: usize) -> Cluster {
        Cluster::start_with(executors, &[], &[])
    }

    /// Like [`Cluster::start`], every process started with `args` and `env` too.
    pub(crate) fn start_with(executors: usize, args: &[&str], env: &[(&str, &str)]) -> Cluster {
        let port = free_port();
        let work = tempfile::tempdir().unwrap();
        let scheduler = Command::new(env!("CARGO_BIN_EXE_pipeline"))
            .args(["scheduler", "--bind", &format!("127.0.0.1:{port}")])
            .args(["--executor-timeout", "4"])
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log_file(work.path(), "scheduler.log"))
            .spawn()
            .unwrap();
        wait_for_port(port, "the scheduler");
        let mut cluster = Cluster {
            scheduler,
            executors: Vec::new(),
            port,
            work,
            node_args: args.iter().map(|a| a.to_string()).collect(),
            node_env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        for _ in 0..executors {
            let child = cluster.executor(&[]).spawn().unwrap();
            cluster.executors.push(child);
        }
        cluster
    }

    /// The command of one more executor, with `env`.
    fn executor(&self, env: &[(&str, &str)]) -> Command {
        let (flight, grpc) = (free_port(), free_port());
        let mut command = Command::new(env!("CARGO_BIN_EXE_pipeline"));
        command
            .arg("executor")
            .args(["--scheduler", &format!("127.0.0.1:{}", self.port)])
            .args(["--bind", &format!("127.0.0.1:{flight}")])
            .args(["--grpc-port", &grpc.to_string()])
            .args(["--concurrent-tasks", "2", "--heartbeat", "1"])
            .arg("--work-dir")
            .arg(self.work.path().join(format!("executor-{flight}")))
            .args(&self.node_args)
            .envs(self.node_env.iter().map(|(k, v)| (k, v)))
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log_file(
                self.work.path(),
                &format!("executor-{flight}.log"),
            ));
        command
    }

    pub(crate) fn url(&self) -> String {
        format!("df://127.0.0.1:{}", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in self.executors.iter_mut().chain([&mut self.scheduler]) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Every row of every table as PyIceberg reads it (tests/interop/dump_rows.py), volatile
/// columns left out.
fn pyiceberg_rows(p: &Project) -> Value {
    let warehouse = p.path().join("warehouse");
    let out = Command::new("python3")
        .arg(repo().join("tests/interop/dump_rows.py"))
        .arg(warehouse.join("catalog.db"))
        .arg(&warehouse)
        .arg("default")
        .args(VOLATILE)
        .output()
        .expect("python3 with pyiceberg (pip install -r tests/requirements.txt)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Where each transform of a run report ran.
pub(crate) fn engines(report: &Value) -> Vec<(String, String)> {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["job"] == "transform")
        .map(|j| {
            (
                j["table"].as_str().unwrap().to_string(),
                j["engine"].as_str().unwrap_or("(up to date)").to_string(),
            )
        })
        .collect()
}

fn with_engine<'a>(args: &[&'a str], url: &'a str) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend(["--engine", url]);
    all
}

#[test]
fn retail_on_a_cluster_gives_the_tables_of_a_local_run_through_backfill_and_rollback() {
    let cluster = Cluster::start(2);
    let url = cluster.url();
    let (local, remote) = (Project::retail(), Project::retail());
    let steps: [&[&str]; 2] = [
        &["run", "retail"],
        &[
            "backfill",
            "retail",
            "--from",
            "2026-02-01",
            "--to",
            "2026-02-28",
        ],
    ];
    for step in steps {
        local.json(step);
        let report = remote.json(&with_engine(step, &url));
        let ran = engines(&report);
        assert!(!ran.is_empty(), "{report}");
        for (table, engine) in &ran {
            assert_eq!(engine, &format!("ballista at {url}"), "{table}: {report}");
        }
        assert_eq!(pyiceberg_rows(&remote), pyiceberg_rows(&local), "{step:?}");
    }
    // Rolling the backfill back gives the first run's tables again, on both.
    for p in [&local, &remote] {
        let runs = p.json(&["runs"]);
        let backfill = runs.as_array().unwrap().last().unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_string();
        p.json(&["rollback", &backfill]);
    }
    assert_eq!(pyiceberg_rows(&remote), pyiceberg_rows(&local));
    // PyIceberg reads by field id: the executors' files carry the table's field ids (a file
    // without them would read as NULLs, not as these values).
    let rows = &pyiceberg_rows(&remote)["gold.monthly_revenue"]["rows"];
    assert_eq!(rows.as_array().unwrap().len(), 3, "{rows}");
    assert!(rows[0].as_array().unwrap().iter().all(|v| !v.is_null()));
}

#[test]
fn drop_expectations_and_parallel_writers_work_the_same_on_the_cluster() {
    let cluster = Cluster::start(2);
    let url = cluster.url();
    let (local, remote) = (Project::retail(), Project::retail());
    for p in [&local, &remote] {
        let spec = std::fs::read_to_string(p.path().join("pipelines/retail.toml")).unwrap();
        p.write(
            "pipelines/retail.toml",
            &format!(
                "{spec}\n[[expect]]\ntable = \"gold.fact_orders\"\ncheck = \"relationships\"\n\
                 column = \"customer_id\"\nto = \"silver.customers.customer_id\"\naction = \"drop\"\n"
            ),
        );
    }
    // Every result is written by parallel writers (rows dealt by the tables' partitions).
    let mut local_run = local.command(&["run", "retail", "--json"]);
    let out = local_run
        .env("PIPELINE_PARALLEL_WRITE_MIN_ROWS", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = remote
        .command(&["run", "retail", "--json", "--engine", &url])
        .env("PIPELINE_PARALLEL_WRITE_MIN_ROWS", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fact = report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["table"] == "gold.fact_orders")
        .unwrap();
    // Customer 99's four orders (tests/expected: the orphans) are dropped.
    assert_eq!(fact["quarantined"], 4, "{fact}");
    assert_eq!(fact["engine"], format!("ballista at {url}"));
    let rows = pyiceberg_rows(&remote);
    assert_eq!(rows, pyiceberg_rows(&local));
    assert_eq!(
        rows["gold.fact_orders__quarantine"]["rows"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    // Each month of silver.orders was written by one writer task: one file per month.
    let files = remote.json(&["files", "silver.orders"]);
    let mut months: Vec<String> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["partition"].as_str().unwrap().to_string())
        .collect();
    let all = months.len();
    months.sort();
    months.dedup();
    assert_eq!(months.len(), all, "{files}");
    assert_eq!(all, 3, "{files}");
}

/// Starts `pipeline run retail` on `cluster` with one executor that stops for good once it
/// wrote a transform's files (before it reports them); returns the run once that happened,
/// with the paused executor.
fn run_until_an_executor_wrote(
    cluster: &Cluster,
    p: &Project,
) -> (std::process::Child, std::process::Child) {
    let mut paused = cluster
        .executor(&[("PIPELINE_PAUSE_AT", "cluster-files-written")])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = paused.stderr.take().unwrap();
    let run = p
        .command(&["run", "retail", "--json", "--engine", &cluster.url()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reached = BufReader::new(stderr)
        .lines()
        .map_while(|l| l.ok())
        .any(|l| l.contains("paused at cluster-files-written"));
    assert!(reached, "the executor never wrote a transform's files");
    (run, paused)
}

#[test]
fn an_executor_killed_during_a_transform_is_recovered_from_and_its_files_never_committed() {
    let mut cluster = Cluster::start(0);
    let local = Project::retail();
    local.json(&["run", "retail"]);
    let remote = Project::retail();
    let (run, mut paused) = run_until_an_executor_wrote(&cluster, &remote);
    // A second executor joins; the first is killed with its files written, not reported.
    let second = cluster.executor(&[]).spawn().unwrap();
    cluster.executors.push(second);
    paused.kill().unwrap();
    paused.wait().unwrap();
    let started = Instant::now();
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "the run took {:?} after the executor died",
        started.elapsed()
    );
    // The lost tasks ran again on the other executor (Ballista's rerun, or the job submitted
    // again): exactly the local tables.
    assert_eq!(pyiceberg_rows(&remote), pyiceberg_rows(&local));
    remote.json(&["check"]);
    // The lost attempt's files are orphans: no snapshot references them.
    let orphans = remote.json(&["orphans", "--older-than", "0", "--force"]);
    let lost = orphans["orphans"].as_array().unwrap();
    assert!(!lost.is_empty(), "{orphans}");
    assert!(
        lost.iter()
            .all(|f| f["path"].as_str().unwrap().ends_with(".parquet")),
        "{orphans}"
    );
}

#[test]
fn a_scheduler_killed_during_a_transform_fails_the_run_and_publishes_nothing() {
    let mut cluster = Cluster::start(0);
    let p = Project::retail();
    let (run, mut paused) = run_until_an_executor_wrote(&cluster, &p);
    cluster.scheduler.kill().unwrap();
    cluster.scheduler.wait().unwrap();
    paused.kill().unwrap();
    paused.wait().unwrap();
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: silver.") && stderr.contains("nothing was published"),
        "{stderr}"
    );
    // Nothing of the run is published: only the record of its failure, no snapshot of any
    // table.
    let (published, failed) = p.runs_by_outcome();
    assert_eq!((published.len(), failed.len()), (0, 1), "{failed:?}");
    for table in p.tables() {
        let history = p.json(&["history", &table]);
        assert_eq!(history.as_array().unwrap().len(), 0, "{table}: {history}");
    }
    // The same run on this machine then publishes every table.
    let report = p.json(&["run", "retail"]);
    assert_eq!(report["tables"].as_array().unwrap().len(), 12, "{report}");
}

#[test]
fn a_table_the_cluster_cannot_read_by_name_is_transformed_on_this_machine() {
    let cluster = Cluster::start(1);
    let url = cluster.url();
    let p = Project::retail();
    p.json(&["run", "retail", "--engine", &url]);
    // silver.orders' `amount` becomes `total` (same derivation: renamed in place, its field
    // id kept); the files written before name it `amount`.
    let sql = std::fs::read_to_string(p.path().join("sql/retail/silver_orders.sql")).unwrap();
    p.write(
        "sql/retail/silver_orders.sql",
        &sql.replace("AS amount", "AS total"),
    );
    let fact = std::fs::read_to_string(p.path().join("sql/retail/gold_fact_orders.sql")).unwrap();
    p.write(
        "sql/retail/gold_fact_orders.sql",
        &fact.replace("o.amount", "o.total AS amount"),
    );
    let out = p
        .command(&[
            "run",
            "retail",
            "--json",
            "--full-refresh",
            "--engine",
            &url,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ran: std::collections::BTreeMap<String, String> = engines(&report).into_iter().collect();
    // silver.orders itself reads bronze (no rename): on the cluster. gold.fact_orders reads
    // the renamed silver.orders: here, with a warning naming the table and why.
    assert_eq!(
        ran["silver.orders"],
        format!("ballista at {url}"),
        "{report}"
    );
    assert_eq!(ran["gold.fact_orders"], "local", "{report}");
    assert!(
        stderr.contains("gold.fact_orders runs on this machine") && stderr.contains("renamed"),
        "{stderr}"
    );
    // And its rows are right: the totals of a local run of the same SQL.
    let local = Project::retail();
    local.write(
        "sql/retail/silver_orders.sql",
        &sql.replace("AS amount", "AS total"),
    );
    local.write(
        "sql/retail/gold_fact_orders.sql",
        &fact.replace("o.amount", "o.total AS amount"),
    );
    local.json(&["run", "retail"]);
    for table in ["gold.fact_orders", "gold.monthly_revenue"] {
        assert_eq!(
            p.contents_without(table, &VOLATILE),
            local.contents_without(table, &VOLATILE),
            "{table}"
        );
    }
}
