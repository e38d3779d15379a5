//! REST catalogs signed with AWS SigV4 (S3 Tables' and Glue's Iceberg REST endpoints), against
//! a real signature check: tests/servers/sigv4_proxy.py recomputes every request's signature
//! with botocore and the known secret, refuses any mismatch with 403, and forwards the rest to
//! rustberg (warehouse on moto's S3). A run, a backfill and a rollback pass through it with the
//! embedded catalog's results; PyIceberg, signing with botocore, reads the same tables through
//! it; a wrong secret or signing name fails with an error that names the catalog and says the
//! signature was refused, and nothing reaches the catalog.

use crate::common::Project;
use crate::remote::{storage_settings, Rustberg, SigV4Proxy, KEY, REGION, SECRET, SECRET_ENV};
use crate::remote_catalogs::{gold_agrees, retail_backfill_rollback, GOLD};

const BUCKET: &str = "arn:aws:s3tables:us-east-1:111122223333:bucket/analytics";

fn refused(proxy: &SigV4Proxy) -> Vec<String> {
    proxy
        .requests()
        .into_iter()
        .filter(|r| !r.starts_with("ok "))
        .collect()
}

#[test]
fn a_run_backfill_and_rollback_signed_with_sigv4_match_the_embedded_catalog() {
    let server = Rustberg::start();
    let proxy = SigV4Proxy::start(&server, "s3tables");
    let p = Project::retail().on_signed_rest(&proxy, "s3tables", "");
    retail_backfill_rollback(&p);
    let requests = proxy.requests();
    assert!(refused(&proxy).is_empty(), "{:?}", refused(&proxy));
    // Reads, creates and the multi-table commit all went through the check, signed.
    for wanted in [
        "ok GET /v1/config",
        "ok HEAD /v1/namespaces/gold",
        "ok GET /v1/namespaces/gold/tables/fact_orders",
        "ok POST /v1/namespaces/silver/tables",
        "ok POST /v1/transactions/commit",
    ] {
        assert!(
            requests.iter().any(|r| r.starts_with(wanted)),
            "no `{wanted}` among {requests:?}"
        );
    }
    // The secret signs every request and shows nowhere, even at debug level.
    let out = p.run(&["-vv", "tables"]);
    assert!(out.status.success());
    for stream in [&out.stdout, &out.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(SECRET));
    }
    // An independent signer (PyIceberg's, botocore's) passes the same check and reads the
    // same tables.
    gold_agrees(&p, &p.pyiceberg_signed(&proxy, "s3tables", &GOLD));
    assert!(refused(&proxy).is_empty(), "{:?}", refused(&proxy));
}

#[test]
fn a_wrong_secret_or_signing_name_is_refused_naming_the_catalog_and_the_signature() {
    const WRONG: &str = "wrong-secret-5d1e0b-never-print";
    let server = Rustberg::start();
    let proxy = SigV4Proxy::start(&server, "s3tables");
    let mut p = Project::retail().on_signed_rest(&proxy, "s3tables", "");
    p.env.retain(|(k, _)| k != SECRET_ENV);
    p.env.push((SECRET_ENV.into(), WRONG.into()));
    let (code, message) = p.fails(&["run", "retail"]);
    assert_eq!(code, 1, "{message}");
    assert!(
        message.contains(&format!("catalog {}", proxy.uri))
            && message.contains("refused this client's SigV4 signature (403")
            && message.contains("signature mismatch"),
        "{message}"
    );
    assert!(
        !message.contains(WRONG) && !message.contains(SECRET),
        "{message}"
    );
    let verdicts = proxy.requests();
    assert!(
        !verdicts.is_empty() && verdicts.iter().all(|r| r.starts_with("refused ")),
        "{verdicts:?}"
    );

    // The right secret for another service: refused too, for its scope.
    let other = SigV4Proxy::start(&server, "glue");
    let q = Project::retail().on_signed_rest(&other, "s3tables", "");
    let (_, message) = q.fails(&["run", "retail"]);
    assert!(
        message.contains("SigV4 signature") && message.contains("credential scope"),
        "{message}"
    );
    // Nothing of either attempt reached the catalog.
    let r = Project::retail().on_rest(&server, true);
    assert_eq!(r.tables(), Vec::<String>::new());
}

#[test]
fn the_s3tables_rest_and_glue_rest_shortcuts_sign_for_their_service_and_warehouse() {
    let server = Rustberg::start();
    let tables = SigV4Proxy::serving(
        &server,
        "s3tables",
        &[
            "--key",
            crate::remote::KEY,
            "--secret",
            SECRET,
            "--warehouse",
            BUCKET,
            "--strip-prefix",
            "/iceberg",
        ],
    );
    let p = Project::retail().on_catalog_section(&format!(
        "\n[catalogs.remote]\ntype = \"s3tables-rest\"\ntable_bucket_arn = \"{BUCKET}\"\n\
         uri = \"{}/iceberg\"\n{}",
        tables.uri,
        storage_settings()
    ));
    p.json(&["run", "retail"]);
    assert!(refused(&tables).is_empty(), "{:?}", refused(&tables));
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders")[0][0],
        Some(crate::common::expected_retail()["counts"]["silver.orders"].to_string())
    );

    // Glue's endpoint for account 111122223333 lists the same tables.
    let glue = SigV4Proxy::serving(
        &server,
        "glue",
        &[
            "--key",
            crate::remote::KEY,
            "--secret",
            SECRET,
            "--warehouse",
            "111122223333",
            "--strip-prefix",
            "/iceberg",
        ],
    );
    let g = Project::retail().on_catalog_section(&format!(
        "\n[catalogs.remote]\ntype = \"glue-rest\"\naccount_id = \"111122223333\"\n\
         uri = \"{}/iceberg\"\n{}",
        glue.uri,
        storage_settings()
    ));
    assert_eq!(g.tables(), p.tables());
    assert!(refused(&glue).is_empty(), "{:?}", refused(&glue));
}

#[test]
fn signing_settings_are_checked_with_the_line() {
    let p = Project::retail();
    let spec = p.path().join("pipelines/retail.toml");
    let original = std::fs::read_to_string(&spec).unwrap();
    for (section, wanted) in [
        (
            "type = \"rest\"\nuri = \"http://h\"\nsigning = \"sigv2\"\n",
            "unknown signing `sigv2`",
        ),
        (
            "type = \"rest\"\nuri = \"http://h\"\nsigning = \"sigv4\"\n",
            "a SigV4-signed catalog needs `region`",
        ),
        (
            "type = \"rest\"\nuri = \"http://h\"\nsigning = \"sigv4\"\nregion = \"eu-west-1\"\ntoken_env = \"T\"\n",
            "`token_env` and `credential_env` do not apply",
        ),
        ("type = \"glue-rest\"\nregion = \"eu-west-1\"\n", "a glue-rest catalog needs `account_id`"),
        (
            "type = \"glue-rest\"\nregion = \"eu-west-1\"\naccount_id = \"12345\"\n",
            "`12345` is not an AWS account id",
        ),
        ("type = \"s3tables-rest\"\ntable_bucket_arn = \"arn:aws:s3:::b\"\n", "is not a table bucket ARN"),
        (
            "type = \"s3tables\"\ntable_bucket_arn = \"arn:aws:s3tables:us-east-1:111122223333:bucket/b\"\nvended_credentials = true\n",
            "`vended_credentials` does not apply to a catalog of type \"s3tables\"",
        ),
        (
            &format!("type = \"s3tables-rest\"\ntable_bucket_arn = \"{BUCKET}\"\nsigning_name = \"glue\"\n"),
            "`signing_name` does not apply to a catalog of type \"s3tables-rest\"",
        ),
    ] {
        let text = format!("{original}\n[catalogs.prod]\n{section}");
        std::fs::write(&spec, &text).unwrap();
        let (code, message) = p.fails(&["validate", "retail"]);
        assert_eq!(code, 2, "{section}: {message}");
        assert!(message.contains(wanted), "{section}: {message}");
        assert!(message.contains("pipelines/retail.toml:"), "{section}: {message}");
    }
}

/// Keys that live two seconds: a profile `short` whose `credential_process`
/// (tests/servers/short_keys.py) hands out a new key pair valid for 2 s at each call, and
/// SigV4 proxies in front of the catalog and of moto's S3 that refuse any key past its expiry.
struct ShortKeys {
    catalog: SigV4Proxy,
    s3: SigV4Proxy,
    _dir: tempfile::TempDir,
}

impl ShortKeys {
    /// `p` on a REST catalog (`server` behind the catalog proxy) signing with the short keys.
    fn on(server: &Rustberg, mut p: Project) -> (Project, ShortKeys) {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys");
        let config = dir.path().join("aws-config");
        std::fs::write(
            &config,
            format!(
                "[profile short]\ncredential_process = python3 {} {} 2\n",
                crate::common::repo()
                    .join("tests/servers/short_keys.py")
                    .display(),
                keys.display()
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join("none"), "").unwrap();
        let catalog = SigV4Proxy::with_short_keys(server, "s3tables", &keys);
        let s3 = SigV4Proxy::s3_with_short_keys(&keys);
        p.env
            .push(("AWS_CONFIG_FILE".into(), config.display().to_string()));
        p.env.push((
            "AWS_SHARED_CREDENTIALS_FILE".into(),
            dir.path().join("none").display().to_string(),
        ));
        let p = p.on_catalog_section(&format!(
            "\n[catalogs.remote]\ntype = \"rest\"\nuri = \"{}\"\nsigning = \"sigv4\"\n\
             signing_name = \"s3tables\"\nprofile = \"short\"\nregion = \"{REGION}\"\n\
             s3_endpoint = \"{}\"\npath_style_access = true\n",
            catalog.uri, s3.uri
        ));
        (
            p,
            ShortKeys {
                catalog,
                s3,
                _dir: dir,
            },
        )
    }

    /// Every request of both proxies was accepted, and each proxy saw at least `keys` keys.
    fn check(&self, keys: usize) {
        for proxy in [&self.catalog, &self.s3] {
            assert!(refused(proxy).is_empty(), "{:?}", refused(proxy));
            let used: std::collections::BTreeSet<String> = proxy
                .requests()
                .iter()
                .filter_map(|r| r.split(" key=").nth(1).map(|k| k.to_string()))
                .collect();
            assert!(used.len() >= keys, "{keys} keys or more expected: {used:?}");
        }
    }
}

#[test]
fn credentials_that_expire_during_a_run_are_fetched_again_for_catalog_and_files() {
    // A signer or an S3 client that read its credentials once would fail as soon as the run
    // outlives the first key.
    let server = Rustberg::start();
    let (p, keys) = ShortKeys::on(&server, Project::retail());
    // The run pauses once staged until the first key has expired (keys live 2 s): its
    // audits and publish then need fresh keys, however fast the run is.
    let started = std::time::Instant::now();
    let paused = p.start_paused(&["run", "retail"], "staged", Some(p.path().join("go")));
    std::thread::sleep(std::time::Duration::from_secs(3).saturating_sub(started.elapsed()));
    let (ok, log) = paused.release();
    assert!(ok, "{log}");
    assert!(started.elapsed().as_secs_f64() > 2.5);
    keys.check(2);
    assert_eq!(
        p.query("SELECT count(*) FROM silver.orders")[0][0],
        Some(crate::common::expected_retail()["counts"]["silver.orders"].to_string())
    );
}

/// Issue 45, step 4: a `schedule run` daemon keeps its credentials fresh for the catalog and
/// for data files, tick after tick, past the expiry of the keys it started with.
#[test]
fn a_scheduler_daemon_signs_with_fresh_keys_tick_after_tick() {
    use std::time::{Duration, Instant};
    let server = Rustberg::start();
    let p = Project::empty();
    p.write(
        "pipelines/p.toml",
        "[pipeline]\nname = \"p\"\n\n[schedule]\ncron = \"*/2 * * * * *\"\n\n[[ingest]]\ntable = \"bronze.t\"\nformat = \"csv\"\npath = \"data/*.csv\"\nschema = { day = \"date\", n = \"long\" }\n\n[[transform]]\ntable = \"silver.s\"\nsql = \"sql/s.sql\"\n",
    );
    p.write(
        "sql/s.sql",
        "SELECT count(*) AS days, sum(n) AS total FROM bronze.t\n",
    );
    let day = |p: &Project, d: u32| {
        p.write(
            &format!("data/2026-03-{d:02}.csv"),
            &format!("day,n\n2026-03-{d:02},{d}\n"),
        )
    };
    day(&p, 1);
    let (p, keys) = ShortKeys::on(&server, p);
    let log = p.path().join("daemon.log");
    let gate = p.path().join("go");
    // The first tick pauses once staged until its first key has expired (keys live 2 s):
    // the daemon must renew its keys within a run, not only between runs.
    let mut daemon = p
        .command(&["schedule", "run"])
        .env("PIPELINE_PAUSE_AT", "staged")
        .env("PIPELINE_PAUSE_UNTIL", &gate)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&log)
        .unwrap()
        .contains("paused at staged")
    {
        assert!(Instant::now() < deadline, "the first tick never staged");
        assert!(daemon.try_wait().unwrap().is_none(), "the scheduler ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(3));
    std::fs::write(&gate, "").unwrap();
    // Three more key lifetimes; a new file every two seconds, so every tick loads data to S3.
    let started = Instant::now();
    let mut days = 1;
    while started.elapsed() < Duration::from_secs(6) {
        std::thread::sleep(Duration::from_secs(2));
        days += 1;
        day(&p, days);
    }
    // SAFETY: signals a child this test started and has not reaped.
    unsafe {
        libc::kill(daemon.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = daemon.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = daemon.kill();
            panic!("the scheduler did not stop within 60 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{said}");
    let runs = p.json(&["runs"]);
    let ticks: Vec<&serde_json::Value> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tick"].is_string())
        .collect();
    assert!(
        ticks.len() >= 3,
        "three ticks or more expected: {runs}\n{said}"
    );
    assert!(
        ticks.iter().all(|r| r["error"].is_null()),
        "a tick failed: {runs}\n{said}"
    );
    // Ticks 2 s apart: the last one served ran past the first key's expiry.
    keys.check(3);
    // What the last tick published, as a fresh command reads it: one row per file it found.
    let total = p.query("SELECT days, total FROM silver.s");
    let loaded = p.query("SELECT count(*), sum(n) FROM bronze.t");
    assert_eq!(total, loaded, "{said}");
    assert!(
        loaded[0][0].as_deref().unwrap().parse::<u32>().unwrap() >= 3,
        "{loaded:?}\n{said}"
    );
}

#[test]
fn a_failing_signed_run_shows_neither_the_secret_nor_the_session_token_anywhere() {
    const TOKEN: &str = "session-token-9b2d4e-never-print";
    let server = Rustberg::start();
    // The bronze namespace exists (made directly on the server); every request for its
    // tables (loads, creates, listings) is refused as API Gateway refuses a signature: the
    // answer echoes the canonical request, session token included.
    crate::common::python(&format!(
        "import urllib.request\n\
         urllib.request.urlopen(urllib.request.Request('{}/v1/namespaces', method='POST',\n\
             data=b'{{\"namespace\": [\"bronze\"]}}', headers={{'Content-Type': 'application/json'}}))\n",
        server.uri
    ));
    let proxy = SigV4Proxy::serving(
        &server,
        "execute-api",
        &[
            "--key",
            KEY,
            "--secret",
            SECRET,
            "--refuse-path",
            "/namespaces/bronze/tables",
        ],
    );
    let mut p = crate::schedule_faults::scheduled("cron = \"0 2 * * *\"\nretries = 0")
        .on_signed_rest(
            &proxy,
            "execute-api",
            "session_token_env = \"PIPELINE_TEST_SESSION\"\n",
        );
    p.env.push(("PIPELINE_TEST_SESSION".into(), TOKEN.into()));
    let tick = p.run(&[
        "-vv",
        "schedule",
        "tick",
        "--now",
        "2026-03-01T02:05:00Z",
        "--json",
    ]);
    let text = p.run(&["schedule", "tick", "--now", "2026-03-01T02:06:00Z"]);
    // An agent asks the MCP server for the runs (the failed tick's error) and the tables
    // (refused now: the server's echo is in the answer).
    let mcp = crate::mcp::drive_over(
        &p,
        &[],
        serde_json::json!([
            {"tool": "list_runs", "arguments": {}},
            {"tool": "list_tables", "arguments": {}},
        ]),
        false,
    );
    let refusal = &mcp["calls"][1];
    assert_eq!(refusal["is_error"], true, "{refusal}");
    assert!(
        refusal["text"]
            .as_str()
            .unwrap()
            .contains("x-amz-security-token:<redacted>"),
        "{refusal}"
    );
    let sinks = [
        (
            "tick --json stdout",
            String::from_utf8_lossy(&tick.stdout).into_owned(),
        ),
        (
            "tick -vv stderr",
            String::from_utf8_lossy(&tick.stderr).into_owned(),
        ),
        (
            "tick text",
            String::from_utf8_lossy(&text.stdout).into_owned(),
        ),
        ("runs --json", p.json(&["runs"]).to_string()),
        (
            "status --json",
            p.json(&["schedule", "status", "--now", "2026-03-01T02:07:00Z"])
                .to_string(),
        ),
        ("mcp answers", mcp.to_string()),
    ];
    let reports: serde_json::Value = serde_json::from_slice(&tick.stdout).unwrap();
    assert_eq!(reports[0]["result"], "failed", "{reports}");
    for (sink, seen) in &sinks {
        assert!(
            !seen.contains(TOKEN),
            "{sink} shows the session token:\n{seen}"
        );
        assert!(!seen.contains(SECRET), "{sink} shows the secret:\n{seen}");
    }
    // The server's echo did reach those sinks, redacted.
    for (sink, seen) in &sinks[..1] {
        assert!(seen.contains("Canonical String"), "{sink}: {seen}");
        assert!(
            seen.contains("x-amz-security-token:<redacted>"),
            "{sink}: {seen}"
        );
    }
    assert!(
        sinks[3].1.contains("x-amz-security-token:<redacted>"),
        "{}",
        sinks[3].1
    );
}
