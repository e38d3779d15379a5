//! Credentials a REST catalog vends with its tables win over the spec's and the environment's
//! (issue 45, step 5). rustberg over moto's S3 stands behind tests/servers/vending_proxy.py,
//! which vends the key `VENDED` with every table to a client that asks for it; the engine's
//! S3 requests go through a second proxy that records the access key id signing each. The
//! spec names the test keys in the environment (the "ambient" ones).

use crate::common::Project;
use crate::remote::{moto, PyServer, Rustberg, KEY, KEY_ENV, REGION, SECRET_ENV};
use crate::remote_catalogs::{gold_agrees, GOLD};

const VENDED: &str = "VENDED";
const VENDED_SECRET: &str = "vended-secret-5e1d-never-print";

/// The catalog section: REST through `catalog`, S3 through `s3`, keys named in the spec.
fn section(name: &str, catalog: &PyServer, s3: &PyServer, vended: bool) -> String {
    format!(
        "\n[catalogs.{name}]\ntype = \"rest\"\nuri = \"{}\"\nvended_credentials = {vended}\n\
         region = \"{REGION}\"\ns3_endpoint = \"{}\"\npath_style_access = true\n\
         access_key_id_env = \"{KEY_ENV}\"\nsecret_access_key_env = \"{SECRET_ENV}\"\n",
        catalog.uri, s3.uri
    )
}

/// The access key ids of the S3 requests logged from line `from` on.
fn signers(s3: &PyServer, from: usize) -> Vec<String> {
    s3.log_lines()[from..]
        .iter()
        .map(|l| {
            let key = l.split(" key=").nth(1).unwrap_or("");
            key.split(' ').next().unwrap_or("").to_string()
        })
        .collect()
}

#[test]
fn credentials_a_catalog_vends_sign_every_request_for_its_files() {
    let server = Rustberg::start();
    let vend = [
        "--target",
        &server.uri,
        "--vend-key",
        VENDED,
        "--vend-secret",
        VENDED_SECRET,
        "--vend-prefix",
        &server.warehouse,
    ];
    let catalog = PyServer::start("vending_proxy.py", &vend);
    let s3 = PyServer::start("vending_proxy.py", &["--target", &moto()]);
    let mut p = Project::retail().on_catalog_section(&section("remote", &catalog, &s3, true));
    for spec in std::fs::read_dir(p.path().join("pipelines")).unwrap() {
        let path = spec.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text + &section("plain", &catalog, &s3, false)).unwrap();
    }

    let out = p.run(&["run", "retail", "-v"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(
        !said.contains(VENDED_SECRET),
        "the vended secret was printed"
    );
    let asked: Vec<String> = catalog
        .log_lines()
        .into_iter()
        .filter(|l| l.contains("/tables"))
        .collect();
    assert!(!asked.is_empty());
    for line in &asked {
        assert!(line.ends_with("delegation=vended-credentials"), "{line}");
    }
    let keys = signers(&s3, 0);
    assert!(keys.len() >= 20, "{} S3 requests", keys.len());
    let others: Vec<&String> = keys.iter().filter(|k| *k != VENDED).collect();
    assert!(
        others.is_empty(),
        "{} of {} S3 requests not signed with the vended key, e.g. {:?}",
        others.len(),
        keys.len(),
        &others[..others.len().min(3)]
    );
    gold_agrees(&p, &p.pyiceberg_remote(Some(&server), &GOLD));

    // Without `vended_credentials` a plain REST catalog does not ask, nothing is vended, and
    // the spec's keys sign.
    let from = s3.log_lines().len();
    p.catalog = Some("plain".into());
    let rows = p.query("SELECT count(*) FROM gold.fact_orders");
    assert!(!rows.is_empty());
    let keys = signers(&s3, from);
    assert!(!keys.is_empty());
    assert!(keys.iter().all(|k| k == KEY), "{keys:?}");
}
