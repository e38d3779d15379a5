//! `[catalog]` and `[catalogs.NAME]`: which catalog holds the tables, and how it is reached.
//! Secrets written in the spec are refused.

use std::path::Path;

use super::position::Positions;
use super::raw::RawCatalog;
use crate::error::{Error, Result};
use crate::spec::catalog::{CatalogConfig, RestConfig, S3Storage, S3TablesConfig};

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
        other => {
            return Err(at.error(
                c.kind.span(),
                format!("unknown catalog type `{other}`"),
                Some("supported: \"sql\" (embedded SQLite catalog + local warehouse), \"s3tables\" (AWS S3 Tables), \"rest\" (any Iceberg REST catalog)".into()),
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
    let parts: Vec<&str> = arn.get_ref().split(':').collect();
    if parts.len() != 6 || parts[2] != "s3tables" || !parts[5].starts_with("bucket/") {
        return Err(at.error(
            arn.span(),
            format!("`{}` is not a table bucket ARN", arn.get_ref()),
            Some("expected arn:aws:s3tables:REGION:ACCOUNT:bucket/NAME".into()),
        ));
    }
    if c.uri.is_some() {
        return Err(unsupported(at, c, "uri", "s3tables"));
    }
    let region = c.region.clone().unwrap_or_else(|| parts[3].to_string());
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
    Ok(CatalogConfig::Rest(RestConfig {
        uri: uri.get_ref().trim_end_matches('/').to_string(),
        warehouse: c.warehouse.clone(),
        credential_env: c.credential_env.clone(),
        token_env: c.token_env.clone(),
        oauth2_server_uri: c.oauth2_server_uri.clone(),
        scope: c.scope.clone(),
        headers: c.headers.clone(),
        transactions: c.transactions.unwrap_or(true),
        storage,
    }))
}
