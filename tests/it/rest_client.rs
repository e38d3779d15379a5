//! The REST catalog client against servers that misbehave (tests/servers/misbehaving_rest.py)
//! and specs that would leak: credentials never follow a redirect, an endless answer or a
//! listing that goes round in a circle ends with a clear error, and a spec that would send
//! credentials in the clear or hold a password in a URL is refused with its line.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::Project;
use crate::remote::{storage_settings, PyServer, Rustberg};
use crate::schedule_faults;

/// A misbehaving server (tests/servers/misbehaving_rest.py in `mode`).
struct Misbehaving(PyServer);

impl Misbehaving {
    fn start(mode: &str, to: &str) -> Misbehaving {
        Misbehaving(PyServer::start(
            "misbehaving_rest.py",
            &["--mode", mode, "--to", to],
        ))
    }

    fn uri(&self) -> &str {
        &self.0.uri
    }

    /// What reached the server (`record` mode).
    fn received(&self) -> String {
        self.0.log_lines().join("\n")
    }
}

const SECRET: &str = "tok-3f9a77c1-never-leaves";

/// A pipeline `p` on a REST catalog whose section holds `catalog` (TOML lines).
fn on_catalog(catalog: &str) -> Project {
    let mut p = Project::empty();
    p.write(
        "pipelines/p.toml",
        &format!(
            "[pipeline]\nname = \"p\"\n\n[catalog]\ntype = \"rest\"\n{catalog}\n\n[[ingest]]\ntable = \"bronze.t\"\n\
             format = \"csv\"\npath = \"data/*.csv\"\nschema = {{ day = \"date\", n = \"long\" }}\n"
        ),
    );
    p.write("data/2026-03-01.csv", "day,n\n2026-03-01,7\n");
    p.env.push(("CATALOG_TOKEN".into(), SECRET.into()));
    p.env
        .push(("CATALOG_CREDENTIAL".into(), format!("client:{SECRET}")));
    p
}

/// `pipeline ARGS`, killed (and the test failed) if it takes more than a minute.
fn within_a_minute(p: &Project, args: &[&str]) -> Output {
    let mut child = p
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            child.kill().unwrap();
            panic!("pipeline {args:?} did not end within a minute");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

fn stderr_of(out: &Output) -> String {
    assert!(!out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn credentials_never_follow_a_redirect_to_another_address() {
    let elsewhere = Misbehaving::start("record", "");
    let redirecting = Misbehaving::start("redirect", elsewhere.uri());
    // A bearer token (and the spec's headers) to the catalog.
    let p = on_catalog(&format!(
        "uri = \"{}\"\ntoken_env = \"CATALOG_TOKEN\"\nheaders = {{ x-team = \"data\" }}",
        redirecting.uri()
    ));
    let err = stderr_of(&within_a_minute(&p, &["run", "p"]));
    assert!(err.contains("redirects to"), "{err}");
    assert!(err.contains("not followed"), "{err}");
    assert!(!err.contains(SECRET), "{err}");
    // An OAuth2 client secret to the token endpoint.
    let p = on_catalog(&format!(
        "uri = \"{}\"\ncredential_env = \"CATALOG_CREDENTIAL\"\noauth2_server_uri = \"{}/v1/oauth/tokens\"",
        elsewhere.uri(), redirecting.uri()
    ));
    let err = stderr_of(&within_a_minute(&p, &["run", "p"]));
    assert!(err.contains("token endpoint"), "{err}");
    assert!(err.contains("not followed"), "{err}");
    assert_eq!(elsewhere.received(), "", "a request followed the redirect");
}

#[test]
fn an_endless_answer_is_cut_off_with_a_clear_error() {
    let server = Misbehaving::start("huge", "");
    let p = on_catalog(&format!("uri = \"{}\"", server.uri()));
    let err = stderr_of(&within_a_minute(&p, &["run", "p"]));
    assert!(err.contains("larger than 128 MiB"), "{err}");
}

#[test]
fn a_listing_whose_page_token_comes_back_stops_with_a_clear_error() {
    let server = Misbehaving::start("circular", "");
    let p = on_catalog(&format!("uri = \"{}\"", server.uri()));
    let err = stderr_of(&within_a_minute(&p, &["tables"]));
    assert!(err.contains("went round in a circle"), "{err}");
    assert!(err.contains("next-page-token `again`"), "{err}");
}

#[test]
fn credentials_in_the_clear_and_passwords_in_urls_are_refused_with_the_line() {
    let cases = [
        (
            "uri = \"http://10.0.0.5:8181\"\ntoken_env = \"CATALOG_TOKEN\"",
            "pipelines/p.toml:6:7",
            "plain http to 10.0.0.5, and the requests carry a bearer token",
        ),
        (
            "uri = \"https://catalog.example.com\"\ncredential_env = \"CATALOG_CREDENTIAL\"\n\
             oauth2_server_uri = \"http://auth.example.com/token\"",
            "pipelines/p.toml:8:21",
            "plain http to auth.example.com, and the requests carry the OAuth2 client secret",
        ),
        (
            "uri = \"http://catalog.example.com\"\nsigning = \"sigv4\"\nregion = \"us-east-1\"",
            "pipelines/p.toml:6:7",
            "carry a SigV4 signature and session token",
        ),
        (
            "uri = \"https://admin:hunter2-pass@catalog.example.com\"",
            "pipelines/p.toml:6:7",
            "must not hold a user name or password",
        ),
        (
            "uri = \"ftp://catalog.example.com\"",
            "pipelines/p.toml:6:7",
            "must be an http or https URL",
        ),
    ];
    for (catalog, at, says) in cases {
        let p = on_catalog(catalog);
        let (code, err) = p.fails(&["validate", "p"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(at), "{catalog}: {err}");
        assert!(err.contains(says), "{catalog}: {err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
    // Plain http to this machine is fine (a local catalog): the spec loads.
    let p = on_catalog("uri = \"http://localhost:9\"\ntoken_env = \"CATALOG_TOKEN\"");
    let err = stderr_of(&within_a_minute(&p, &["validate", "p"]));
    assert!(!err.contains("plain http"), "{err}");
    assert!(err.contains("localhost:9"), "{err}");
}

/// The OAuth2 token endpoint in front of a rustberg requiring `KEY` (tests/servers/oauth_proxy.py).
struct OAuthProxy {
    proxy: PyServer,
    _server: Rustberg,
}

const CLIENT: &str = "etl:client-secret-5e1f0c-never-leaves";

impl OAuthProxy {
    fn start(lifetime: &str, options: &[&str]) -> OAuthProxy {
        const KEY: &str = "rb_pipelinetestkey0123456789";
        let server = Rustberg::start_with(Some(KEY));
        let mut args = vec![
            "--target",
            &server.uri,
            "--api-key",
            KEY,
            "--client",
            CLIENT,
        ];
        args.extend_from_slice(&["--lifetime", lifetime]);
        args.extend_from_slice(options);
        OAuthProxy {
            proxy: PyServer::start("oauth_proxy.py", &args),
            _server: server,
        }
    }

    /// The proxy's log lines that start with `kind` (`token`, `ok`, `refused`).
    fn lines(&self, kind: &str) -> Vec<String> {
        self.proxy
            .log_lines()
            .into_iter()
            .filter(|l| l.starts_with(kind))
            .collect()
    }

    /// A pipeline `p` on this catalog, reached with the client credential.
    fn project(&self) -> Project {
        let mut p = schedule_faults::scheduled("cron = \"0 2 * * *\"").on_catalog_section(
            &format!(
                "\n[catalogs.remote]\ntype = \"rest\"\nuri = \"{}\"\ncredential_env = \"CATALOG_CREDENTIAL\"\n{}",
                self.proxy.uri,
                storage_settings()
            ),
        );
        p.env.push(("CATALOG_CREDENTIAL".into(), CLIENT.into()));
        p
    }
}

#[test]
fn an_oauth2_token_that_expires_during_a_run_is_renewed_before_the_publish() {
    // Tokens live three seconds; the run stages, then waits five before publishing.
    let proxy = OAuthProxy::start("3", &[]);
    let p = proxy.project();
    let gate = p.path().join("release");
    let paused = p.start_paused(&["-vv", "run", "p"], "staged", Some(gate));
    std::thread::sleep(Duration::from_secs(5));
    let (ok, log) = paused.release();
    assert!(ok, "{log}\n{:?}", proxy.lines("refused"));
    assert_eq!(proxy.lines("refused"), Vec::<String>::new());
    assert!(
        proxy.lines("token").len() >= 2,
        "{:?}",
        proxy.lines("token")
    );
    assert!(
        !log.contains("client-secret-5e1f0c"),
        "the client secret was logged"
    );
    assert!(!log.contains("tok-"), "a token was logged");
    assert_eq!(p.query("SELECT sum(n) FROM bronze.t"), [[Some("7".into())]]);
}

#[test]
fn a_token_the_catalog_refuses_is_replaced_once_and_the_request_sent_again() {
    let proxy = OAuthProxy::start("3600", &["--revoke-first"]);
    let p = proxy.project();
    let out = within_a_minute(&p, &["run", "p"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        proxy.lines("refused").len(),
        1,
        "{:?}",
        proxy.lines("refused")
    );
    assert_eq!(proxy.lines("token").len(), 2, "{:?}", proxy.lines("token"));
    assert_eq!(p.query("SELECT sum(n) FROM bronze.t"), [[Some("7".into())]]);
}

/// Item 7: one regional endpoint serves many buckets (S3 Tables) or warehouses (Glue). A
/// pipeline of one name on two warehouses behind one URI are two catalogs: a run on one does
/// not block a run on the other, and the message of a busy lock names the warehouse.
#[test]
fn two_warehouses_behind_one_uri_have_a_run_lock_each() {
    let (dev_server, prod_server) = (Rustberg::start_on_files(), Rustberg::start_on_files());
    let endpoint = PyServer::start(
        "warehouses.py",
        &[
            "--warehouse",
            &format!("dev={}", dev_server.uri),
            "--warehouse",
            &format!("prod={}", prod_server.uri),
        ],
    );
    let on = |warehouse: &str| {
        let section = format!(
            "\n[catalogs.remote]\ntype = \"rest\"\nuri = \"{}\"\nwarehouse = \"{warehouse}\"\n",
            endpoint.uri
        );
        Project::retail().on_catalog_section(&section)
    };
    let (dev, prod) = (on("dev"), on("prod"));
    let running = dev.start_paused(&["run", "retail"], "staged", None);

    let out = within_a_minute(&dev, &["run", "retail", "--no-wait"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let busy = stderr_of(&out);
    assert!(
        busy.contains(&format!(
            "pipeline retail is already running on the rest catalog {} (warehouse dev)",
            endpoint.uri
        )),
        "{busy}"
    );

    let out = within_a_minute(&prod, &["run", "retail", "--no-wait"]);
    assert!(
        out.status.success(),
        "the other warehouse's run must not wait for dev's: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let published = prod.tables();
    assert!(
        published.contains(&"gold.customer_metrics".to_string()),
        "prod's run published: {published:?}"
    );
    running.kill();
    assert!(
        endpoint.log_lines().iter().any(|l| l.ends_with("-> prod")),
        "prod's requests went through the one endpoint"
    );
}
