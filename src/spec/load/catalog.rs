//! `[catalog]` and `[catalogs.NAME]`: which catalog holds the tables, and how it is reached.
//! Secrets written in the spec are refused.

use std::path::Path;

use toml::Spanned;

use super::endpoint::check_endpoint;
use super::position::Positions;
use super::raw::RawCatalog;
use crate::error::{Error, Result};
use crate::spec::catalog::{CatalogConfig, RestConfig, S3Storage, S3TablesConfig, SigV4Signing};

/// One `[catalog]` or `[catalogs.NAME]` table.
pub(super) fn catalog_config(
    at: &Positions,
    project_dir: &Path,
    c: &RawCatalog,
) -> Result<CatalogConfig> {
    refuse_written_secrets(at, c)?;
    let storage = s3_storage(at, c)?;
    Ok(match c.kind.get_ref().as_str() {
        "sql" => sql_catalog(at, project_dir, c)?,
        "s3tables" => s3tables_catalog(at, c, storage)?,
        "rest" => rest_catalog(at, c, storage)?,
        "s3tables-rest" => s3tables_rest_catalog(at, c, storage)?,
        "glue-rest" => glue_rest_catalog(at, c, storage)?,
        other => {
            return Err(at.error(
                c.kind.span(),
                format!("unknown catalog type `{other}`"),
                Some("supported: \"sql\" (embedded SQLite catalog + local warehouse), \"s3tables\" (AWS S3 Tables through its API), \"s3tables-rest\" (S3 Tables' Iceberg REST endpoint), \"glue-rest\" (Glue's Iceberg REST endpoint), \"rest\" (any Iceberg REST catalog)".into()),
            ))
        }
    })
}

/// Secrets are never written in the spec: the error at the first one that is.
fn refuse_written_secrets(at: &Positions, c: &RawCatalog) -> Result<()> {
    for (secret, key) in [
        (&c.secret_access_key, "secret_access_key"),
        (&c.access_key_id, "access_key_id"),
        (&c.session_token, "session_token"),
        (&c.token, "token"),
        (&c.credential, "credential"),
    ] {
        if let Some(value) = secret {
            return Err(at.error(
                value.span(),
                format!("`{key}` must not be written in the spec file"),
                Some(format!(
                    "put it in an environment variable and name that variable with `{key}_env = \"VAR\"`, or leave it out to use the standard AWS credential chain"
                )),
            ));
        }
    }
    Ok(())
}

/// How the table files in S3 are reached; the two key variables are given together or not
/// at all.
fn s3_storage(at: &Positions, c: &RawCatalog) -> Result<S3Storage> {
    let storage = S3Storage {
        endpoint: c.s3_endpoint.clone(),
        region: c.region.clone(),
        path_style_access: c.path_style_access.unwrap_or(false),
        profile: c.profile.clone(),
        access_key_id_env: c.access_key_id_env.clone(),
        secret_access_key_env: c
            .secret_access_key_env
            .as_ref()
            .map(|s| s.get_ref().clone()),
        session_token_env: c.session_token_env.clone(),
    };
    if storage.access_key_id_env.is_some() != storage.secret_access_key_env.is_some() {
        return Err(at.error(
            c.kind.span(),
            "access_key_id_env and secret_access_key_env must be given together".into(),
            Some("or leave both out to use the standard AWS credential chain".into()),
        ));
    }
    Ok(storage)
}

/// The error for a `field` that a catalog of type `kind` does not take.
fn unsupported(at: &Positions, c: &RawCatalog, field: &str, kind: &str) -> Error {
    at.error(
        c.kind.span(),
        format!("`{field}` does not apply to a catalog of type \"{kind}\""),
        None,
    )
}

/// `type = "sql"`: the embedded SQLite catalog (`uri = sqlite://PATH`, by default
/// `warehouse/catalog.db`) and its local warehouse, both under `project_dir`.
fn sql_catalog(at: &Positions, project_dir: &Path, c: &RawCatalog) -> Result<CatalogConfig> {
    if c.server_maintains.is_some() {
        return Err(unsupported(at, c, "server_maintains", "sql"));
    }
    if c.vended_credentials.is_some() {
        return Err(unsupported(at, c, "vended_credentials", "sql"));
    }
    let database = match &c.uri {
        None => project_dir.join("warehouse/catalog.db"),
        Some(uri) => {
            let u = uri.get_ref();
            let path = u
                .strip_prefix("sqlite://")
                .or_else(|| u.strip_prefix("sqlite:"))
                .ok_or_else(|| {
                    at.error(
                        uri.span(),
                        format!("unsupported catalog uri `{u}`"),
                        Some("the embedded catalog takes sqlite://PATH, e.g. sqlite://warehouse/catalog.db".into()),
                    )
                })?;
            let path = path.split('?').next().unwrap_or(path);
            project_dir.join(path)
        }
    };
    Ok(CatalogConfig::Sql {
        name: c.name.clone().unwrap_or_else(|| "default".into()),
        database,
        warehouse: project_dir.join(c.warehouse.as_deref().unwrap_or("warehouse")),
    })
}

/// `type = "s3tables"`: an AWS S3 Tables bucket by its ARN; the region is the ARN's unless
/// given.
fn s3tables_catalog(at: &Positions, c: &RawCatalog, storage: S3Storage) -> Result<CatalogConfig> {
    let Some(arn) = &c.table_bucket_arn else {
        return Err(at.error(
            c.kind.span(),
            "an s3tables catalog needs `table_bucket_arn`".into(),
            Some("e.g. table_bucket_arn = \"arn:aws:s3tables:us-east-1:111122223333:bucket/analytics\"".into()),
        ));
    };
    let arn_region = table_bucket_region(at, arn)?;
    if c.server_maintains.is_some() {
        return Err(unsupported(at, c, "server_maintains", "s3tables"));
    }
    if c.vended_credentials.is_some() {
        return Err(unsupported(at, c, "vended_credentials", "s3tables"));
    }
    if c.uri.is_some() {
        return Err(unsupported(at, c, "uri", "s3tables"));
    }
    refuse_signing(at, c, "s3tables")?;
    let region = c.region.clone().unwrap_or(arn_region);
    Ok(CatalogConfig::S3Tables(S3TablesConfig {
        table_bucket_arn: arn.get_ref().clone(),
        region: region.clone(),
        endpoint_url: c.endpoint_url.clone(),
        storage: S3Storage {
            region: Some(region),
            ..storage
        },
    }))
}

/// The region of a table bucket ARN (`arn:aws:s3tables:REGION:ACCOUNT:bucket/NAME`), or the
/// error at the ARN.
fn table_bucket_region(at: &Positions, arn: &Spanned<String>) -> Result<String> {
    let parts: Vec<&str> = arn.get_ref().split(':').collect();
    if parts.len() != 6 || parts[2] != "s3tables" || !parts[5].starts_with("bucket/") {
        return Err(at.error(
            arn.span(),
            format!("`{}` is not a table bucket ARN", arn.get_ref()),
            Some("expected arn:aws:s3tables:REGION:ACCOUNT:bucket/NAME".into()),
        ));
    }
    Ok(parts[3].to_string())
}

/// The AWS kinds sign by themselves (`s3tables` through the AWS SDK) and take no bearer
/// token or OAuth2 credential.
fn refuse_signing(at: &Positions, c: &RawCatalog, kind: &str) -> Result<()> {
    for (set, field) in [
        (c.signing.is_some(), "signing"),
        (c.signing_name.is_some(), "signing_name"),
        (c.signing_region.is_some(), "signing_region"),
        (c.token_env.is_some(), "token_env"),
        (c.credential_env.is_some(), "credential_env"),
        (c.oauth2_server_uri.is_some(), "oauth2_server_uri"),
    ] {
        if set {
            return Err(unsupported(at, c, field, kind));
        }
    }
    Ok(())
}

/// `signing = "sigv4"` (with `signing_name`, default `execute-api`, and `signing_region` or
/// `region`) of a plain REST catalog.
fn rest_signing(at: &Positions, c: &RawCatalog) -> Result<Option<SigV4Signing>> {
    let Some(signing) = &c.signing else {
        if c.signing_name.is_some() || c.signing_region.is_some() {
            return Err(at.error(
                c.kind.span(),
                "`signing_name` and `signing_region` need `signing = \"sigv4\"`".into(),
                None,
            ));
        }
        return Ok(None);
    };
    match signing.get_ref().as_str() {
        "sigv4" => {}
        "none" => return Ok(None),
        other => {
            return Err(at.error(
                signing.span(),
                format!("unknown signing `{other}`"),
                Some("supported: \"sigv4\" (AWS Signature Version 4) or \"none\"".into()),
            ))
        }
    }
    let Some(region) = c.signing_region.clone().or_else(|| c.region.clone()) else {
        return Err(at.error(
            signing.span(),
            "a SigV4-signed catalog needs `region` (or `signing_region`)".into(),
            Some("e.g. region = \"us-east-1\"".into()),
        ));
    };
    if c.token_env.is_some() || c.credential_env.is_some() {
        return Err(at.error(
            signing.span(),
            "a SigV4-signed catalog is reached with AWS credentials; `token_env` and `credential_env` do not apply".into(),
            Some("name AWS credentials with access_key_id_env / secret_access_key_env or `profile`, or leave them out for the standard AWS chain".into()),
        ));
    }
    Ok(Some(SigV4Signing {
        name: c
            .signing_name
            .clone()
            .unwrap_or_else(|| "execute-api".into()),
        region,
    }))
}

/// `type = "s3tables-rest"`: S3 Tables' Iceberg REST endpoint for the bucket `table_bucket_arn`
/// (`https://s3tables.REGION.amazonaws.com/iceberg`, or `uri`), signed with SigV4 as `s3tables`.
fn s3tables_rest_catalog(
    at: &Positions,
    c: &RawCatalog,
    storage: S3Storage,
) -> Result<CatalogConfig> {
    let Some(arn) = &c.table_bucket_arn else {
        return Err(at.error(
            c.kind.span(),
            "an s3tables-rest catalog needs `table_bucket_arn`".into(),
            Some("e.g. table_bucket_arn = \"arn:aws:s3tables:us-east-1:111122223333:bucket/analytics\"".into()),
        ));
    };
    let region = c.region.clone().unwrap_or(table_bucket_region(at, arn)?);
    refuse_signing(at, c, "s3tables-rest")?;
    if let Some(uri) = &c.uri {
        let carried = Some("a SigV4 signature and session token");
        check_endpoint(at, uri.span(), "uri", uri.get_ref(), carried)?;
    }
    Ok(CatalogConfig::Rest(RestConfig {
        uri: c.uri.as_ref().map_or_else(
            || format!("https://s3tables.{region}.amazonaws.com/iceberg"),
            |u| u.get_ref().trim_end_matches('/').to_string(),
        ),
        warehouse: Some(arn.get_ref().clone()),
        signing: Some(SigV4Signing {
            name: "s3tables".into(),
            region: region.clone(),
        }),
        flavor: "s3tables-rest",
        server_maintains: c.server_maintains.unwrap_or(true),
        ..aws_rest(c, storage, region)
    }))
}

/// `type = "glue-rest"`: the Glue Data Catalog of `account_id` through Glue's Iceberg REST
/// endpoint (`https://glue.REGION.amazonaws.com/iceberg`, or `uri`), signed as `glue`;
/// `warehouse` picks another catalog of the account (e.g. `ACCOUNT:s3tablescatalog/BUCKET`).
fn glue_rest_catalog(at: &Positions, c: &RawCatalog, storage: S3Storage) -> Result<CatalogConfig> {
    let Some(account) = &c.account_id else {
        return Err(at.error(
            c.kind.span(),
            "a glue-rest catalog needs `account_id`".into(),
            Some("the 12-digit AWS account whose Glue Data Catalog holds the tables, e.g. account_id = \"111122223333\"".into()),
        ));
    };
    let id = account.get_ref();
    if id.len() != 12 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(at.error(
            account.span(),
            format!("`{id}` is not an AWS account id"),
            Some("an account id has 12 digits".into()),
        ));
    }
    let Some(region) = c.region.clone() else {
        return Err(at.error(
            c.kind.span(),
            "a glue-rest catalog needs `region`".into(),
            Some("e.g. region = \"us-east-1\"".into()),
        ));
    };
    if c.table_bucket_arn.is_some() {
        return Err(unsupported(at, c, "table_bucket_arn", "glue-rest"));
    }
    refuse_signing(at, c, "glue-rest")?;
    if let Some(uri) = &c.uri {
        let carried = Some("a SigV4 signature and session token");
        check_endpoint(at, uri.span(), "uri", uri.get_ref(), carried)?;
    }
    Ok(CatalogConfig::Rest(RestConfig {
        uri: c.uri.as_ref().map_or_else(
            || format!("https://glue.{region}.amazonaws.com/iceberg"),
            |u| u.get_ref().trim_end_matches('/').to_string(),
        ),
        warehouse: Some(c.warehouse.clone().unwrap_or_else(|| id.clone())),
        signing: Some(SigV4Signing {
            name: "glue".into(),
            region: region.clone(),
        }),
        flavor: "glue-rest",
        ..aws_rest(c, storage, region)
    }))
}

/// The settings an AWS REST endpoint shares with a plain REST catalog (its data on S3 in
/// `region`); bearer tokens and OAuth2 do not apply.
fn aws_rest(c: &RawCatalog, storage: S3Storage, region: String) -> RestConfig {
    RestConfig {
        uri: String::new(),
        warehouse: None,
        credential_env: None,
        token_env: None,
        oauth2_server_uri: None,
        scope: None,
        headers: c.headers.clone(),
        transactions: c.transactions.unwrap_or(true),
        signing: None,
        flavor: "rest",
        server_maintains: c.server_maintains.unwrap_or(false),
        vended_credentials: c.vended_credentials.unwrap_or(true),
        storage: S3Storage {
            region: Some(region),
            ..storage
        },
    }
}

/// `type = "rest"`: any Iceberg REST catalog at `uri` (without a trailing `/`).
fn rest_catalog(at: &Positions, c: &RawCatalog, storage: S3Storage) -> Result<CatalogConfig> {
    let Some(uri) = &c.uri else {
        return Err(at.error(
            c.kind.span(),
            "a rest catalog needs `uri`".into(),
            Some("e.g. uri = \"https://catalog.example.com/api/catalog\"".into()),
        ));
    };
    if c.table_bucket_arn.is_some() {
        return Err(unsupported(at, c, "table_bucket_arn", "rest"));
    }
    if c.account_id.is_some() {
        return Err(unsupported(at, c, "account_id", "rest"));
    }
    let signing = rest_signing(at, c)?;
    let carried = if signing.is_some() {
        Some("a SigV4 signature and session token")
    } else if c.token_env.is_some() {
        Some("a bearer token")
    } else if c.credential_env.is_some() {
        Some("an OAuth2 token")
    } else {
        None
    };
    check_endpoint(at, uri.span(), "uri", uri.get_ref(), carried)?;
    if let Some(server) = &c.oauth2_server_uri {
        let secret = c
            .credential_env
            .as_ref()
            .map(|_| "the OAuth2 client secret");
        check_endpoint(
            at,
            server.span(),
            "oauth2_server_uri",
            server.get_ref(),
            secret,
        )?;
    }
    Ok(CatalogConfig::Rest(RestConfig {
        uri: uri.get_ref().trim_end_matches('/').to_string(),
        warehouse: c.warehouse.clone(),
        credential_env: c.credential_env.clone(),
        token_env: c.token_env.clone(),
        oauth2_server_uri: c.oauth2_server_uri.as_ref().map(|u| u.get_ref().clone()),
        scope: c.scope.clone(),
        headers: c.headers.clone(),
        transactions: c.transactions.unwrap_or(true),
        signing,
        flavor: "rest",
        server_maintains: c.server_maintains.unwrap_or(false),
        vended_credentials: c.vended_credentials.unwrap_or(false),
        storage,
    }))
}
