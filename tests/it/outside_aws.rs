//! Outside AWS, quietly. A REST catalog on file storage (rustberg with a local warehouse, as a
//! Polaris, Nessie or Lakekeeper user would have it) never walks the AWS credential chain:
//! with no credentials anywhere and the instance metadata service unreachable, a run prints
//! nothing of `aws_config` and takes as long as on the embedded catalog. Where the chain is
//! walked (a spec naming an AWS profile), its warnings reach stderr as one line each in the
//! engine's words, the details only with -v. Run records name the operating system's user
//! even when `$USER` is unset.

use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::Project;
use crate::remote::Rustberg;

/// A metadata service that is reachable but never answers, as off AWS where the address is
/// not refused: a listener that accepts connections (the kernel does) and never reads them.
/// A client asking it waits for its timeouts. Lives as long as the test.
fn silent_metadata_service() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// `command` with no AWS settings of the environment, and the metadata service at
/// `metadata` (see [`silent_metadata_service`]).
fn without_aws(mut command: Command, metadata: &str) -> Command {
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") {
            command.env_remove(&name);
        }
    }
    command
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", metadata)
        .env("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/aws-credentials",
        );
    command
}

fn timed(mut command: Command) -> (Duration, Output) {
    let started = Instant::now();
    let out = command.output().unwrap();
    (started.elapsed(), out)
}

#[test]
fn a_rest_catalog_on_file_storage_never_walks_the_aws_chain() {
    let server = Rustberg::start_on_files();
    let (_imds, metadata) = silent_metadata_service();
    let rest = Project::retail().on_rest_files(&server);
    let local = Project::retail();
    let (local_time, out) = timed(without_aws(local.command(&["run", "retail"]), &metadata));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (rest_time, out) = timed(without_aws(rest.command(&["run", "retail"]), &metadata));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("aws_config"), "{stderr}");
    // No log line of any library (the run's own report says WARNING of an expectation).
    assert!(!stderr.contains(" WARN "), "{stderr}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("warning:")),
        "{stderr}"
    );
    assert!(!stderr.contains("AWS"), "{stderr}");
    // Asking the silent metadata service would cost its timeouts (about 5 s when this
    // catalog walked the chain); the REST catalog's own requests are local.
    assert!(
        rest_time < local_time + Duration::from_secs(2),
        "REST {rest_time:?} against embedded {local_time:?}"
    );
    // The same tables.
    for table in ["gold.monthly_revenue", "gold.customer_metrics"] {
        assert_eq!(rest.contents(table), local.contents(table), "{table}");
    }
    // The warehouse is the server's local folder: the data files are there.
    let location = rest.json(&["describe", "gold.fact_orders"])["metadata_location"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(location.starts_with("file://"), "{location}");
}

#[test]
fn a_dependency_warning_is_one_line_in_the_engines_words_and_whole_with_v() {
    let server = Rustberg::start_on_files();
    let (_imds, metadata) = silent_metadata_service();
    let rest = Project::retail();
    // A spec that asks for an AWS profile makes the SDK walk the chain; the profile exists
    // nowhere and the metadata service does not answer.
    let spec = rest.path().join("pipelines/retail.toml");
    let mut text = std::fs::read_to_string(&spec).unwrap();
    text.push_str(&format!(
        "\n[catalogs.remote]\ntype = \"rest\"\nuri = \"{}\"\nprofile = \"nowhere\"\n",
        server.uri
    ));
    std::fs::write(&spec, text).unwrap();
    let quiet = without_aws(rest.command(&["--catalog", "remote", "tables"]), &metadata)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "the SDK said nothing: {stderr}");
    for line in &lines {
        // No tracing prefix of a library, no Debug dump, one line each.
        assert!(
            line.starts_with("warning: ") || line.starts_with("error: "),
            "{line}"
        );
        assert!(
            !line.contains("Response {") && !line.contains("{ "),
            "{line}"
        );
        assert!(line.chars().count() < 600, "{line}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("the AWS SDK could not load credentials or a region")),
        "{stderr}"
    );
    // -v shows the SDK's own messages, with their target.
    let verbose = without_aws(
        rest.command(&["--catalog", "remote", "-v", "tables"]),
        &metadata,
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    assert!(stderr.contains("aws_config"), "{stderr}");
}

#[test]
fn a_run_record_names_the_system_user_when_user_is_unset() {
    let p = Project::retail();
    let expected = Command::new("id").arg("-un").output().unwrap();
    let expected = String::from_utf8_lossy(&expected.stdout).trim().to_string();
    assert!(!expected.is_empty());
    let out = p
        .command(&["run", "retail"])
        .env_remove("USER")
        .env_remove("LOGNAME")
        .env_remove("USERNAME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = p.json(&["runs"]);
    assert_eq!(runs[0]["user"], expected.as_str(), "{runs}");
}
