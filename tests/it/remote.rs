//! Real local servers for the remote-catalog tests: moto (S3 and S3 Tables, started by
//! tests/run-all.sh, address in `PIPELINE_TEST_MOTO`) and rustberg (an Iceberg REST catalog
//! with multi-table commits; one server per test, binary in `PIPELINE_TEST_RUSTBERG`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Project;

/// Names of the environment variables the test specs take credentials from.
pub const KEY_ENV: &str = "PIPELINE_TEST_AWS_KEY_ID";
pub const SECRET_ENV: &str = "PIPELINE_TEST_AWS_SECRET";
/// The secret itself: it must never appear in any output.
pub const SECRET: &str = "moto-secret-3f9c1a7e-never-print";
pub const KEY: &str = "AKIAPIPELINETEST";
pub const REGION: &str = "us-east-1";

fn required_env(name: &str, what: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: {what}; run the suite with ./tests/run-all.sh, which starts it")
    })
}

/// moto's address, e.g. `http://127.0.0.1:5077`.
pub fn moto() -> String {
    required_env("PIPELINE_TEST_MOTO", "the moto server (S3 and S3 Tables)")
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A fresh lowercase name.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// Creates an S3 Tables table bucket in moto; returns its ARN.
pub fn table_bucket() -> String {
    let name = unique("tb");
    runtime().block_on(async {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(moto())
            .region(aws_config::Region::new(REGION))
            .credentials_provider(aws_credential_types::Credentials::new(
                KEY, SECRET, None, None, "test",
            ))
            .load()
            .await;
        aws_sdk_s3tables::Client::new(&config)
            .create_table_bucket()
            .name(&name)
            .send()
            .await
            .expect("create a table bucket in moto")
            .arn()
            .to_string()
    })
}

/// Creates a plain S3 bucket in moto (moto does not check signatures).
pub fn s3_bucket() -> String {
    let name = unique("wh");
    runtime().block_on(async {
        let response = reqwest::Client::new()
            .put(format!("{}/{name}", moto()))
            .send()
            .await
            .expect("create a bucket in moto");
        assert!(response.status().is_success(), "{}", response.status());
    });
    name
}

/// The catalog-section lines for moto's S3 with the test credentials.
pub fn storage_settings() -> String {
    format!(
        "region = \"{REGION}\"\ns3_endpoint = \"{}\"\npath_style_access = true\n\
         access_key_id_env = \"{KEY_ENV}\"\nsecret_access_key_env = \"{SECRET_ENV}\"\n",
        moto()
    )
}

/// A rustberg REST catalog with its warehouse in a fresh moto bucket; stopped when dropped.
pub struct Rustberg {
    child: Child,
    pub uri: String,
    pub warehouse: String,
    _dir: tempfile::TempDir,
}

impl Rustberg {
    /// A server without authentication.
    pub fn start() -> Rustberg {
        Rustberg::start_with(None)
    }

    /// With `api_key`, the server requires it (as `Authorization: Bearer KEY`) on every
    /// catalog request.
    pub fn start_with(api_key: Option<&str>) -> Rustberg {
        Rustberg::launch(api_key, false)
    }

    /// A server without authentication whose warehouse is a local folder: nothing of AWS
    /// anywhere (as a Polaris, Nessie or Lakekeeper user on a file system would have it).
    pub fn start_on_files() -> Rustberg {
        Rustberg::launch(None, true)
    }

    fn launch(api_key: Option<&str>, on_files: bool) -> Rustberg {
        let binary = required_env("PIPELINE_TEST_RUSTBERG", "the rustberg REST catalog binary");
        let dir = tempfile::tempdir().unwrap();
        let (warehouse, storage) = if on_files {
            let folder = dir.path().join("wh");
            std::fs::create_dir_all(&folder).unwrap();
            (format!("file://{}", folder.display()), String::new())
        } else {
            (
                format!("s3://{}/wh", s3_bucket()),
                format!(
                    "[storage.properties]\n\"s3.endpoint\" = \"{}\"\n\"s3.path-style-access\" = \"true\"\n\
                     \"s3.region\" = \"{REGION}\"\n\"s3.access-key-id\" = \"{KEY}\"\n\
                     \"s3.secret-access-key\" = \"{SECRET}\"\n\n",
                    moto()
                ),
            )
        };
        let config = dir.path().join("rustberg.toml");
        std::fs::write(
            &config,
            format!(
                "{storage}[rate_limit]\nenabled = false\n\n[audit]\nsink = \"none\"\n{}",
                if api_key.is_some() {
                    "\n[[server.auth.api_keys]]\nname = \"ci-admin\"\ntenant = \"default\"\n\
                     roles = [\"admin\"]\nkey_env = \"RUSTBERG_TEST_KEY\"\n"
                } else {
                    ""
                }
            ),
        )
        .unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut command = Command::new(binary);
        if let Some(key) = api_key {
            command.env("RUSTBERG_TEST_KEY", key);
        } else {
            command.arg("--no-auth");
        }
        let child = command
            .arg("--config")
            .arg(&config)
            .args(["--dev", "--insecure-http", "--host", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .arg("--catalog-url")
            .arg(format!("file://{}", dir.path().join("catalog").display()))
            .args(["--warehouse", &warehouse, "--log-level", "warn"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rustberg");
        let server = Rustberg {
            child,
            uri: format!("http://127.0.0.1:{port}"),
            warehouse,
            _dir: dir,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        let url = format!("{}/ready", self.uri);
        runtime().block_on(async {
            loop {
                if let Ok(r) = reqwest::get(&url).await {
                    if r.status().is_success() {
                        return;
                    }
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "rustberg did not become ready at {url}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    }
}

impl Drop for Rustberg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Appends `section` (a `[catalogs.remote]` table) to every spec of the project.
fn add_catalog(p: &Project, section: &str) {
    for entry in std::fs::read_dir(p.path().join("pipelines")).unwrap() {
        let path = entry.unwrap().path();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(section);
        std::fs::write(&path, text).unwrap();
    }
}

impl Project {
    /// Every command of this project now runs on a fresh S3 Tables table bucket (moto).
    pub fn on_s3tables(self) -> Project {
        let arn = table_bucket();
        self.on_s3tables_bucket(&arn)
    }

    /// Every command of this project now runs on the S3 Tables table bucket `arn` (which
    /// another project may use too: a writer this project's locks do not hold off).
    pub fn on_s3tables_bucket(mut self, arn: &str) -> Project {
        add_catalog(
            &self,
            &format!(
                "\n[catalogs.remote]\ntype = \"s3tables\"\ntable_bucket_arn = \"{arn}\"\n\
                 endpoint_url = \"{}\"\n{}",
                moto(),
                storage_settings()
            ),
        );
        self.use_remote();
        self
    }

    /// Every command of this project now runs on `server` (REST, warehouse on moto S3).
    /// `transactions = false` makes the engine publish table by table, as on servers
    /// without multi-table commits.
    pub fn on_rest(self, server: &Rustberg, transactions: bool) -> Project {
        self.on_rest_with(server, &format!("transactions = {transactions}\n"))
    }

    /// Every command of this project now runs on `server`, a REST catalog on local files: the
    /// spec has no storage settings and the environment no AWS credentials.
    pub fn on_rest_files(self, server: &Rustberg) -> Project {
        self.on_rest_files_with(server, "")
    }

    /// Like [`Project::on_rest_files`], with more settings in the catalog section.
    pub fn on_rest_files_with(mut self, server: &Rustberg, settings: &str) -> Project {
        add_catalog(
            &self,
            &format!(
                "\n[catalogs.remote]\ntype = \"rest\"\nuri = \"{}\"\n{settings}",
                server.uri
            ),
        );
        self.catalog = Some("remote".into());
        self
    }

    /// Like [`Project::on_rest`], with more settings in the catalog section.
    pub fn on_rest_with(mut self, server: &Rustberg, settings: &str) -> Project {
        add_catalog(
            &self,
            &format!(
                "\n[catalogs.remote]\ntype = \"rest\"\nuri = \"{}\"\n{settings}{}",
                server.uri,
                storage_settings()
            ),
        );
        self.use_remote();
        self
    }

    /// Every command of this project now runs on the catalog `section` (a `[catalogs.remote]`
    /// table, storage settings included), with the test credentials in the environment.
    pub fn on_catalog_section(mut self, section: &str) -> Project {
        add_catalog(&self, section);
        self.use_remote();
        self
    }

    fn use_remote(&mut self) {
        self.catalog = Some("remote".into());
        self.env.push((KEY_ENV.into(), KEY.into()));
        self.env.push((SECRET_ENV.into(), SECRET.into()));
    }

    /// Another writer: PyIceberg appends a copy of one row of `table` through `server`'s REST
    /// API (tests/interop/append_rest.py). Returns the new snapshot id.
    pub fn pyiceberg_append(&self, server: &Rustberg, table: &str) -> i64 {
        let out = Command::new("python3")
            .arg(crate::common::repo().join("tests/interop/append_rest.py"))
            .arg(&server.uri)
            .arg(table)
            .env("S3_ENDPOINT", moto())
            .env("AWS_ACCESS_KEY_ID", KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("AWS_REGION", REGION)
            .output()
            .expect("python3 must be installed");
        assert!(
            out.status.success(),
            "PyIceberg append failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    /// PyIceberg's reading of the given tables (tests/interop/read_remote.py): rows and the
    /// sum of every integer and decimal column, per table. REST tables are read through
    /// PyIceberg's RestCatalog; others from their current metadata file.
    pub fn pyiceberg_remote(&self, rest: Option<&Rustberg>, tables: &[&str]) -> serde_json::Value {
        self.read_remote(rest.map(|r| (r.uri.as_str(), None)), tables)
    }

    /// Like [`Project::pyiceberg_remote`], through `proxy`, PyIceberg signing its requests
    /// with its own SigV4 signer (botocore's) as `service`.
    pub fn pyiceberg_signed(
        &self,
        proxy: &SigV4Proxy,
        service: &str,
        tables: &[&str],
    ) -> serde_json::Value {
        self.read_remote(Some((proxy.uri.as_str(), Some(service))), tables)
    }

    /// Like [`Project::pyiceberg_remote`], each table read at the head of branch `branch`
    /// (null where the table has no such branch).
    pub fn pyiceberg_branch(
        &self,
        rest: Option<&Rustberg>,
        tables: &[&str],
        branch: &str,
    ) -> serde_json::Value {
        self.read_remote_at(rest.map(|r| (r.uri.as_str(), None)), tables, Some(branch))
    }

    fn read_remote(
        &self,
        rest: Option<(&str, Option<&str>)>,
        tables: &[&str],
    ) -> serde_json::Value {
        self.read_remote_at(rest, tables, None)
    }

    fn read_remote_at(
        &self,
        rest: Option<(&str, Option<&str>)>,
        tables: &[&str],
        branch: Option<&str>,
    ) -> serde_json::Value {
        let mut command = Command::new("python3");
        if let Some(branch) = branch {
            command.env("READ_BRANCH", branch);
        }
        command
            .arg(crate::common::repo().join("tests/interop/read_remote.py"))
            .env("S3_ENDPOINT", moto())
            .env("AWS_ACCESS_KEY_ID", KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("AWS_REGION", REGION);
        match rest {
            Some((uri, signing)) => {
                if let Some(name) = signing {
                    command.env("SIGV4_SIGNING_NAME", name);
                }
                command.arg("rest").arg(uri).args(tables);
            }
            None => {
                command.arg("static");
                for t in tables {
                    let location = self.json(&["describe", t])["metadata_location"]
                        .as_str()
                        .unwrap()
                        .to_string();
                    command.arg(format!("{t}={location}"));
                }
            }
        }
        let out = command.output().expect("python3 must be installed");
        assert!(
            out.status.success(),
            "PyIceberg failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// A SigV4-verifying proxy in front of a [`Rustberg`] (tests/servers/sigv4_proxy.py): it
/// plays AWS's Iceberg REST endpoint, recomputing each request's signature with botocore and
/// the test secret for `service` in us-east-1, answering 403 on any mismatch and forwarding
/// the rest. Stopped when dropped.
pub struct SigV4Proxy {
    pub uri: String,
    _server: PyServer,
}

impl SigV4Proxy {
    pub fn start(target: &Rustberg, service: &str) -> SigV4Proxy {
        SigV4Proxy::serving(target, service, &["--key", KEY, "--secret", SECRET])
    }

    /// A proxy accepting the short-lived keys tests/servers/short_keys.py appends to
    /// `keys_file`, each only until it expires.
    pub fn with_short_keys(
        target: &Rustberg,
        service: &str,
        keys_file: &std::path::Path,
    ) -> SigV4Proxy {
        let keys = keys_file.display().to_string();
        SigV4Proxy::serving(target, service, &["--keys-file", &keys])
    }

    /// moto's S3 behind a proxy accepting only the short-lived keys of `keys_file`.
    pub fn s3_with_short_keys(keys_file: &std::path::Path) -> SigV4Proxy {
        let keys = keys_file.display().to_string();
        SigV4Proxy::to(&moto(), "s3", &["--keys-file", &keys])
    }

    /// A proxy with more `options` (the keys it accepts first): as an AWS endpoint serving one
    /// warehouse under a path, `["--key", K, "--secret", S, "--warehouse", ARN,
    /// "--strip-prefix", "/iceberg"]`.
    pub fn serving(target: &Rustberg, service: &str, options: &[&str]) -> SigV4Proxy {
        SigV4Proxy::to(&target.uri, service, options)
    }

    /// A proxy in front of `uri` (see [`SigV4Proxy::serving`]).
    pub fn to(uri: &str, service: &str, options: &[&str]) -> SigV4Proxy {
        let mut args = vec!["--target", uri, "--region", REGION, "--service", service];
        args.extend_from_slice(options);
        let server = PyServer::start("sigv4_proxy.py", &args);
        SigV4Proxy {
            uri: server.uri.clone(),
            _server: server,
        }
    }

    /// The proxy's verdicts so far, one line per request: `ok|refused METHOD PATH [reason]`.
    pub fn requests(&self) -> Vec<String> {
        self._server.log_lines()
    }
}

impl Project {
    /// Every command of this project now runs on `proxy` (REST signed with SigV4 as
    /// `service`; warehouse on moto S3), with `settings` added to the catalog section.
    pub fn on_signed_rest(mut self, proxy: &SigV4Proxy, service: &str, settings: &str) -> Project {
        add_catalog(
            &self,
            &format!(
                "\n[catalogs.remote]\ntype = \"rest\"\nuri = \"{}\"\nsigning = \"sigv4\"\n\
                 signing_name = \"{service}\"\n{settings}{}",
                proxy.uri,
                storage_settings()
            ),
        );
        self.use_remote();
        self
    }
}

/// A test server `tests/servers/SCRIPT`, started with `args`, `--exit-with-parent` and
/// `--log LOG`; it prints its port on stdout when it listens. Killed on drop.
pub struct PyServer {
    child: std::process::Child,
    pub uri: String,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl PyServer {
    pub fn start(script: &str, args: &[&str]) -> PyServer {
        use std::io::BufRead;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.log");
        let mut child = Command::new("python3")
            .arg(crate::common::repo().join("tests/servers").join(script))
            .args(args)
            .arg("--exit-with-parent")
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 must be installed");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{script} did not start: {line:?}"));
        PyServer {
            child,
            uri: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        }
    }

    /// What the server logged so far, a line each.
    pub fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
