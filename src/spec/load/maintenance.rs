//! `[maintenance]`: sizes, counts and durations, each checked with its position.

use std::time::Duration;

use toml::Spanned;

use super::position::Positions;
use super::raw::RawMaintenance;
use crate::error::Result;
use crate::spec::expect::parse_duration_micros;
use crate::spec::maintenance::Maintenance;

pub(super) fn maintenance(at: &Positions, raw: &RawMaintenance) -> Result<Maintenance> {
    let defaults = Maintenance::default();
    let megabytes = |raw: &Option<Spanned<u64>>, key: &str| -> Result<Option<usize>> {
        match raw {
            None => Ok(None),
            Some(mb) if *mb.get_ref() == 0 => Err(at.error(
                mb.span(),
                format!("{key} must be at least 1"),
                Some(format!("a size in MiB, e.g. {key} = 128")),
            )),
            Some(mb) => Ok(Some(*mb.get_ref() as usize * 1024 * 1024)),
        }
    };
    let at_least = |raw: &Option<Spanned<u64>>, key: &str, min: u64, default: usize| match raw {
        None => Ok(default),
        Some(n) if *n.get_ref() < min => {
            Err(at.error(n.span(), format!("{key} must be at least {min}"), None))
        }
        Some(n) => Ok(*n.get_ref() as usize),
    };
    let expire_older_than = match &raw.expire_older_than {
        None => defaults.expire_older_than,
        Some(text) => match parse_duration_micros(text.get_ref()) {
            Some(micros) if micros >= 0 => Duration::from_micros(micros as u64),
            _ => {
                return Err(at.error(
                    text.span(),
                    format!("`{}` is not a duration", text.get_ref()),
                    Some("write a number and a unit: 12h, 5d (0s expires every snapshot beyond keep_last)".into()),
                ))
            }
        },
    };
    Ok(Maintenance {
        target_file_size: megabytes(&raw.target_file_size_mb, "target_file_size_mb")?,
        small_file_size: megabytes(&raw.small_file_mb, "small_file_mb")?,
        min_input_files: at_least(
            &raw.min_input_files,
            "min_input_files",
            2,
            defaults.min_input_files,
        )?,
        expire_older_than,
        keep_last: at_least(&raw.keep_last, "keep_last", 1, defaults.keep_last)?,
        keep_runs: at_least(&raw.keep_runs, "keep_runs", 0, defaults.keep_runs)?,
        max_manifests: at_least(
            &raw.max_manifests,
            "max_manifests",
            1,
            defaults.max_manifests,
        )?,
        after_run: raw.after_run,
    })
}

#[cfg(test)]
mod tests {
    use crate::spec::load_with_catalog;

    const JOB: &str = "[pipeline]\nname = \"p\"\n\n[[ingest]]\ntable = \"bronze.t\"\nformat = \"csv\"\npath = \"data/*.csv\"\nschema = { day = \"date\" }\n";
    const CATALOGS: &str = r#"
[catalogs.s3]
type = "s3tables"
table_bucket_arn = "arn:aws:s3tables:us-east-1:111122223333:bucket/b"

[catalogs.s3rest]
type = "s3tables-rest"
table_bucket_arn = "arn:aws:s3tables:us-east-1:111122223333:bucket/b"

[catalogs.glue]
type = "glue-rest"
account_id = "111122223333"
region = "us-east-1"

[catalogs.rest]
type = "rest"
uri = "http://127.0.0.1:8181"

[catalogs.managed]
type = "rest"
uri = "http://127.0.0.1:8181"
server_maintains = true
"#;

    /// Whether runs maintain their tables, per catalog: the embedded one first.
    fn after_run(maintenance: &str) -> Vec<(&'static str, bool)> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pipelines")).unwrap();
        let spec = format!("{JOB}{maintenance}{CATALOGS}");
        std::fs::write(dir.path().join("pipelines/p.toml"), spec).unwrap();
        [
            None,
            Some("s3"),
            Some("s3rest"),
            Some("glue"),
            Some("rest"),
            Some("managed"),
        ]
        .into_iter()
        .map(|c| {
            let p = load_with_catalog(dir.path(), "p", c).unwrap();
            (c.unwrap_or("embedded"), p.maintains_after_run())
        })
        .collect()
    }

    #[test]
    fn runs_maintain_their_tables_by_default_where_the_catalog_does_not() {
        assert_eq!(
            after_run(""),
            [
                ("embedded", true),
                ("s3", false),
                ("s3rest", false),
                ("glue", true),
                ("rest", true),
                ("managed", false),
            ]
        );
        let off = after_run("\n[maintenance]\nafter_run = false\n");
        assert!(off.iter().all(|(_, on)| !on), "{off:?}");
        let on = after_run("\n[maintenance]\nafter_run = true\n");
        assert!(on.iter().all(|(_, on)| *on), "{on:?}");
    }

    #[test]
    fn server_maintains_is_refused_where_it_does_not_apply() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pipelines")).unwrap();
        let spec = format!("{JOB}\n[catalog]\ntype = \"sql\"\nserver_maintains = true\n");
        std::fs::write(dir.path().join("pipelines/p.toml"), spec).unwrap();
        let error = load_with_catalog(dir.path(), "p", None)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`server_maintains` does not apply to a catalog of type \"sql\""),
            "{error}"
        );
    }
}
