//! Test harness: a throw-away project directory and the real `pipeline` binary.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::Receiver;

use serde_json::Value;

/// A project directory in a temp folder, removed when dropped.
pub struct Project {
    pub dir: tempfile::TempDir,
    /// Environment variables every command gets (e.g. credentials a remote catalog names).
    pub env: Vec<(String, String)>,
    /// `--catalog NAME` added to every command (a `[catalogs.NAME]` of the specs).
    pub catalog: Option<String>,
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

impl Project {
    /// An empty project.
    pub fn empty() -> Project {
        Project {
            dir: tempfile::tempdir().unwrap(),
            env: Vec::new(),
            catalog: None,
        }
    }

    /// Runs of this project leave their tables to an explicit `pipeline maintain` (`[maintenance]
    /// after_run = false` in every spec): what tests of maintenance itself start from.
    pub fn maintained_by_hand(self) -> Project {
        for entry in std::fs::read_dir(self.path().join("pipelines")).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, format!("{text}\n[maintenance]\nafter_run = false\n")).unwrap();
        }
        self
    }

    /// A copy of the repository's retail pipeline, SQL and sample data.
    pub fn retail() -> Project {
        let p = Project::empty();
        for d in ["pipelines", "sql", "sample-data"] {
            copy_tree(&repo().join(d), &p.path().join(d));
        }
        p
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file (creating folders) relative to the project.
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// `pipeline --project DIR [--catalog NAME] ARGS...`, with the project's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pipeline"));
        command.arg("--project").arg(self.path()).args(args);
        if let Some(catalog) = &self.catalog {
            command.arg("--catalog").arg(catalog);
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Runs `pipeline --project DIR ARGS...`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .output()
            .expect("run the pipeline binary")
    }

    /// The stdout of `pipeline ARGS --json`, which must succeed.
    fn json_stdout(&self, args: &[&str]) -> Vec<u8> {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "pipeline {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Runs a command that must succeed and returns its `--json` output.
    pub fn json(&self, args: &[&str]) -> Value {
        let stdout = self.json_stdout(args);
        serde_json::from_slice(&stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&stdout)))
    }

    /// Runs a command that must fail and still print `--json` output (e.g. `pipeline test`
    /// with a failing test); returns that output.
    pub fn json_failing(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert!(
            !out.status.success(),
            "pipeline {args:?} should have failed"
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
    }

    /// Runs a command that must fail; returns (exit code, stderr from its `error:` line on,
    /// without the progress lines before it).
    pub fn fails(&self, args: &[&str]) -> (i32, String) {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "pipeline {args:?} should have failed; stdout:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let from = stderr.find("error: ").unwrap_or(0);
        (
            out.status.code().unwrap_or(-1),
            stderr[from..].trim().to_string(),
        )
    }

    /// Rows of a query, every value as text (see [`rows_of`]).
    pub fn query(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        self.query_result(&["query", sql]).1
    }

    /// Rows of a query at a snapshot.
    pub fn query_as_of(&self, sql: &str, snapshot: i64) -> Vec<Vec<Option<String>>> {
        self.query_result(&["query", sql, "--as-of", &snapshot.to_string()])
            .1
    }

    /// The columns and rows (see [`rows_of`]) of `pipeline ARGS --json`, a `query`.
    pub fn query_result(&self, args: &[&str]) -> (Vec<String>, Vec<Vec<Option<String>>>) {
        rows_of(&self.json_stdout(args))
    }

    /// Every table in the project's catalog, as `pipeline tables` lists them.
    pub fn tables(&self) -> Vec<String> {
        self.json(&["tables"])
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["table"].as_str().unwrap().to_string())
            .collect()
    }

    /// Reads every table with PyIceberg and DuckDB (tests/interop/read_tables.py): per table
    /// and reader, the row count and the sum of every integer and decimal column.
    pub fn independent_readers(&self) -> Value {
        let warehouse = self.path().join("warehouse");
        let out = Command::new("python3")
            .arg(repo().join("tests/interop/read_tables.py"))
            .arg(warehouse.join("catalog.db"))
            .arg(&warehouse)
            .arg("default")
            .output()
            .expect("python3 must be installed (see tests/run-all.sh)");
        assert!(
            out.status.success(),
            "the PyIceberg/DuckDB reader failed (pip install -r tests/requirements.txt):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Every row of a table, sorted by all its columns (for comparing whole tables).
    pub fn contents(&self, table: &str) -> Vec<Vec<Option<String>>> {
        self.contents_without(table, &[])
    }

    /// Like [`Project::contents`], leaving out some columns (e.g. `_ingested_at` and `_run_id`,
    /// which differ from run to run).
    pub fn contents_without(&self, table: &str, skip: &[&str]) -> Vec<Vec<Option<String>>> {
        let columns: Vec<String> = self.json(&["describe", table])["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .filter(|c| !skip.contains(c))
            .map(|c| format!("\"{c}\""))
            .collect();
        self.query(&format!(
            "SELECT {0} FROM {table} ORDER BY {0}",
            columns.join(", ")
        ))
    }

    /// The live data files of a table: path -> (partition, SHA-256 of the file's bytes).
    pub fn files(&self, table: &str) -> std::collections::BTreeMap<String, (String, String)> {
        use sha2::Digest;
        self.json(&["files", table])
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let path = f["path"].as_str().unwrap().to_string();
                let bytes = std::fs::read(&path).unwrap();
                let hash = format!("{:x}", sha2::Sha256::digest(&bytes));
                (path, (f["partition"].as_str().unwrap().to_string(), hash))
            })
            .collect()
    }

    /// `pipeline runs --json`: the records of runs that published (`.0`) and of runs that
    /// failed (`.1`, recorded with their error and no table).
    pub fn runs_by_outcome(&self) -> (Vec<Value>, Vec<Value>) {
        let all = self.json(&["runs"]).as_array().unwrap().clone();
        all.into_iter().partition(|r| r["error"].is_null())
    }

    /// Adds `text` to the end of `pipelines/retail.toml`.
    pub fn append_to_retail_spec(&self, text: &str) {
        let spec = std::fs::read_to_string(self.path().join("pipelines/retail.toml")).unwrap();
        self.write("pipelines/retail.toml", &format!("{spec}{text}"));
    }

    /// Asserts that every table of tests/expected/retail.json holds exactly the reference's
    /// rows.
    pub fn assert_retail_reference_rows(&self) {
        let expected = expected_retail();
        for (table, want) in expected["tables"].as_object().unwrap() {
            let (_, rows) =
                self.query_result(&["query", &format!("SELECT * FROM {table} ORDER BY 1")]);
            let want_rows: Vec<Vec<Option<String>>> =
                serde_json::from_value(want["rows"].clone()).unwrap();
            assert_eq!(rows, want_rows, "rows of {table}");
        }
    }

    /// Asserts that no partition of `table` is in two live files; returns how many files
    /// (so partitions) it has.
    pub fn assert_one_file_per_partition(&self, table: &str) -> usize {
        let files = self.json(&["files", table]);
        let partitions: Vec<&str> = files
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["partition"].as_str().unwrap())
            .collect();
        let distinct: std::collections::BTreeSet<&str> = partitions.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            partitions.len(),
            "{table}: a partition in two files: {files}"
        );
        partitions.len()
    }

    /// The current snapshot id of a table.
    pub fn current_snapshot(&self, table: &str) -> i64 {
        id(&self.json(&["describe", table])["current_snapshot_id"]).expect("table has a snapshot")
    }
}

/// The stdout of `python3 -c SCRIPT`, which must succeed (the readers and clients of
/// tests/requirements.txt are installed by tests/run-all.sh).
pub fn python(script: &str) -> Vec<u8> {
    let out = Command::new("python3")
        .args(["-c", script])
        .output()
        .expect("python3 must be installed (see tests/run-all.sh)");
    assert!(
        out.status.success(),
        "python failed (pip install -r tests/requirements.txt):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A snapshot id of a `--json` document or an MCP result: a string of digits (ids are above
/// 2^53, so never JSON numbers). `None` for null or anything else.
pub fn id(value: &Value) -> Option<i64> {
    value.as_str().and_then(|text| text.parse().ok())
}

/// The tables whose jobs a run report says wrote a snapshot (not `nothing new`, not `up to
/// date`).
pub fn written_tables(report: &Value) -> std::collections::BTreeSet<String> {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| {
            !matches!(
                j["action"].as_str(),
                Some("nothing new") | Some("up to date")
            )
        })
        .map(|j| j["table"].as_str().unwrap().to_string())
        .collect()
}

/// The columns and rows of `pipeline query --json` output, every value as text: a string as
/// it is, a number or boolean as its JSON token (so decimals keep their digits: `9.00`), NULL
/// as `None`.
pub fn rows_of(stdout: &[u8]) -> (Vec<String>, Vec<Vec<Option<String>>>) {
    #[derive(serde::Deserialize)]
    struct Result {
        columns: Vec<String>,
        rows: Vec<Vec<Box<serde_json::value::RawValue>>>,
    }
    let result: Result = serde_json::from_slice(stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(stdout)));
    let rows = result
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|raw| match raw.get() {
                    "null" => None,
                    text if text.starts_with('"') => {
                        Some(serde_json::from_str::<String>(text).unwrap())
                    }
                    text => Some(text.to_string()),
                })
                .collect()
        })
        .collect();
    (result.columns, rows)
}

/// The expected outputs of the retail sample, computed by tests/reference/retail_expected.py
/// (an independent pure-Python implementation reading the raw files).
pub fn expected_retail() -> Value {
    let text = std::fs::read_to_string(repo().join("tests/expected/retail.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A `pipeline` command stopped at a pause point (`PIPELINE_PAUSE_AT`), its stderr drained in
/// the background.
pub struct Paused {
    child: Child,
    gate: Option<PathBuf>,
    /// Its stderr after the pause, line by line.
    log: Receiver<String>,
    /// The lines [`Paused::wait_for`] read.
    heard: Vec<String>,
    /// Its stderr up to the pause.
    before: String,
    stdout: Option<Receiver<String>>,
}

impl Project {
    /// Starts `pipeline ARGS` and returns once it says it paused at `point`. With `gate`, the
    /// pause ends when that file exists ([`Paused::release`]); without, it lasts until killed.
    pub fn start_paused(&self, args: &[&str], point: &str, gate: Option<PathBuf>) -> Paused {
        self.start_paused_with(args, point, gate, false)
    }

    /// Like [`Project::start_paused`], keeping the command's stdout for
    /// [`Paused::release_with_stdout`].
    pub fn start_paused_piped(&self, args: &[&str], point: &str, gate: PathBuf) -> Paused {
        self.start_paused_with(args, point, Some(gate), true)
    }

    fn start_paused_with(
        &self,
        args: &[&str],
        point: &str,
        gate: Option<PathBuf>,
        keep_stdout: bool,
    ) -> Paused {
        let mut command = self.command(args);
        command
            .env("PIPELINE_PAUSE_AT", point)
            .stdout(if keep_stdout {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::piped());
        if let Some(gate) = &gate {
            command.env("PIPELINE_PAUSE_UNTIL", gate);
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().map(|mut out| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = std::io::Read::read_to_string(&mut out, &mut text);
                let _ = tx.send(text);
            });
            rx
        });
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let reached = lines.by_ref().map_while(|l| l.ok()).any(|line| {
            seen.push_str(&line);
            seen.push('\n');
            line.contains(&format!("paused at {point}"))
        });
        if !reached {
            child.wait().unwrap();
            panic!("pipeline {args:?} ended without reaching {point}:\n{seen}");
        }
        let (tx, log) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Paused {
            child,
            gate,
            log,
            heard: Vec::new(),
            before: seen,
            stdout,
        }
    }
}

/// A paused command is never left behind: a test that fails before it ends the pause kills it.
impl Drop for Paused {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Paused {
    /// Sends SIGTERM to the paused process (it goes on to the end of its pause).
    pub fn terminate(&self) {
        // SAFETY: sends a signal to a child process this test started and has not reaped.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
    }

    /// Sends `signal` (e.g. `libc::SIGSTOP` to freeze it whole, `libc::SIGCONT` to thaw it).
    pub fn signal(&self, signal: i32) {
        // SAFETY: sends a signal to a child process this test started and has not reaped.
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
    }

    /// Kills the paused process with SIGKILL.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Its stderr up to the pause.
    pub fn before(&self) -> &str {
        &self.before
    }

    /// Whether the paused command wrote a stderr line containing `needle` before the pause, or
    /// writes one within `within` (while paused, its other tasks go on).
    pub fn wait_for(&mut self, needle: &str, within: std::time::Duration) -> bool {
        if self.before.lines().any(|l| l.contains(needle)) {
            return true;
        }
        let deadline = std::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    self.heard.push(line);
                    if found {
                        return true;
                    }
                }
                Err(_) => return false,
            }
        }
    }

    /// Lets the paused command go on; returns (success, stderr after the pause).
    pub fn release(mut self) -> (bool, String) {
        std::fs::write(self.gate.as_ref().expect("started with a gate"), "").unwrap();
        let status = self.child.wait().unwrap();
        let mut lines = std::mem::take(&mut self.heard);
        lines.extend(self.log.iter());
        (status.success(), lines.join("\n"))
    }

    /// Like [`Paused::release`], also returning stdout (started with
    /// [`Project::start_paused_piped`]).
    pub fn release_with_stdout(mut self) -> (bool, String, String) {
        let stdout = self.stdout.take().expect("started piped");
        let (ok, log) = self.release();
        (ok, log, stdout.recv().unwrap())
    }
}

/// Where a run report (`run --json`) says the job writing `table` ran (`local`, `local in N
/// batches`, a cluster; empty when no job wrote it).
pub fn engine(report: &Value, table: &str) -> String {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["table"] == table)
        .map(|j| j["engine"].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

/// What a run report (`run --json`) says a job did to `table` (empty when no job wrote it).
pub fn action(report: &Value, table: &str) -> String {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["table"] == table)
        .map(|j| j["action"].as_str().unwrap().to_string())
        .unwrap_or_default()
}
