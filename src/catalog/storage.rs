//! Access to S3 for remote catalogs: the AWS SDK configuration (region, endpoint, credentials)
//! and the `FileIO` properties for data and metadata files.
//!
//! Credentials come from the AWS SDK's standard chain (environment, shared profile, SSO,
//! instance or container role) or the environment variables the spec names. Where the SDK
//! provides them they are loaded once at connection (a missing credential fails there) and
//! kept fresh after, for the S3 client too (`data_credentials.rs`); static keys the spec names
//! for a REST catalog are handed to the S3 client as properties. Never logged or printed.
//!
//! The chain is walked only where AWS is certain to be needed: for S3 Tables, and for a REST
//! catalog whose spec names an AWS profile ([`rest_file_io_props`]). A REST catalog on file
//! storage, or one that vends credentials with its tables, never touches it (the chain probes
//! the instance metadata service, which off AWS costs seconds and prints warnings); S3 files
//! of a REST catalog that vends nothing are signed with the environment's credentials when
//! they are first read.

use std::collections::HashMap;
use std::sync::Arc;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use iceberg::io::{
    S3_ACCESS_KEY_ID, S3_ENDPOINT, S3_PATH_STYLE_ACCESS, S3_REGION, S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
};
use iceberg_storage_opendal::CustomAwsCredentialLoader;

use super::data_credentials::{self, DATA_FILES};
use super::fresh_credentials::FreshCredentials;
use crate::error::{Error, Result};
use crate::spec::S3Storage;

/// The SDK configuration for `storage`, with `endpoint_url` for the service API (S3 Tables).
pub async fn sdk_config(
    catalog: &str,
    storage: &S3Storage,
    endpoint_url: Option<&str>,
) -> Result<SdkConfig> {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(region) = &storage.region {
        loader = loader.region(Region::new(region.clone()));
    }
    if let Some(profile) = &storage.profile {
        loader = loader.profile_name(profile);
    }
    if let Some(url) = endpoint_url {
        loader = loader.endpoint_url(url);
    }
    if let Some(c) = storage.credentials().map_err(|message| Error::Catalog {
        catalog: catalog.to_string(),
        message,
    })? {
        loader = loader.credentials_provider(Credentials::new(
            c.access_key_id,
            c.secret_access_key,
            c.session_token,
            None,
            "pipeline-spec-env",
        ));
    }
    Ok(loader.load().await)
}

/// What a catalog's S3 files are reached with: FileIO properties (endpoint, region, path
/// style, and static keys the spec names where nothing renews them) and, where credentials
/// come from a provider, that provider's credentials kept fresh for the S3 client.
pub struct S3Access {
    pub props: HashMap<String, String>,
    pub credentials: Option<Arc<FreshCredentials>>,
}

impl S3Access {
    /// The S3 credential loader for iceberg's storage factories, when credentials come from
    /// a provider.
    pub fn loader(&self) -> Option<CustomAwsCredentialLoader> {
        self.credentials.clone().map(data_credentials::loader)
    }
}

/// The endpoint, region and path style of `storage` as FileIO properties.
fn location_props(storage: &S3Storage, region: Option<String>) -> HashMap<String, String> {
    s3_location_props(
        storage.endpoint.as_deref(),
        region,
        storage.path_style_access,
    )
}

/// An S3 endpoint, region and path style as FileIO properties.
pub(super) fn s3_location_props(
    endpoint: Option<&str>,
    region: Option<String>,
    path_style: bool,
) -> HashMap<String, String> {
    let mut props = HashMap::new();
    if let Some(endpoint) = endpoint {
        props.insert(S3_ENDPOINT.to_string(), endpoint.to_string());
    }
    if let Some(region) = region {
        props.insert(S3_REGION.to_string(), region);
    }
    if path_style {
        props.insert(S3_PATH_STYLE_ACCESS.to_string(), "true".to_string());
    }
    props
}

/// The first of the environment variables `names` that is set and not blank.
pub(super) fn first_env(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
}

/// S3 access through `sdk`'s credentials, loaded once here (to fail early) and kept fresh
/// after. With `required` false, no credentials is not an error (a REST catalog may vend
/// them).
pub async fn file_io_props(
    catalog: &str,
    storage: &S3Storage,
    sdk: &SdkConfig,
    required: bool,
) -> Result<S3Access> {
    let props = location_props(storage, sdk.region().map(|r| r.to_string()));
    let Some(provider) = sdk.credentials_provider() else {
        return Ok(S3Access {
            props,
            credentials: None,
        });
    };
    let fresh = Arc::new(FreshCredentials::new(provider, DATA_FILES));
    match fresh.current().await {
        Ok(_) => Ok(S3Access {
            props,
            credentials: Some(fresh),
        }),
        Err(e) if !required => {
            tracing::debug!("no AWS credentials for storage ({e}); relying on the catalog");
            Ok(S3Access {
                props,
                credentials: None,
            })
        }
        Err(message) => Err(Error::Catalog {
            catalog: catalog.to_string(),
            message,
        }),
    }
}

/// `FileIO` properties for the S3 storage a REST catalog's tables may live on, without the
/// AWS SDK's default chain: endpoint, region (the spec's, or `AWS_REGION` /
/// `AWS_DEFAULT_REGION`), path style, and the static credentials the spec names. Only a spec
/// naming an AWS `profile` has the SDK resolve it. Without credentials, S3 files are signed
/// when first read, by the table's vended credentials or the environment's.
pub async fn rest_file_io_props(catalog: &str, storage: &S3Storage) -> Result<S3Access> {
    if storage.profile.is_some() {
        let sdk = sdk_config(catalog, storage, None).await?;
        return file_io_props(catalog, storage, &sdk, false).await;
    }
    let region = storage
        .region
        .clone()
        .or_else(|| first_env(&["AWS_REGION", "AWS_DEFAULT_REGION"]));
    let mut props = location_props(storage, region);
    let named = storage.credentials().map_err(|message| Error::Catalog {
        catalog: catalog.to_string(),
        message,
    })?;
    if let Some(c) = named {
        insert_credentials(
            &mut props,
            &c.access_key_id,
            &c.secret_access_key,
            c.session_token.as_deref(),
        );
    }
    Ok(S3Access {
        props,
        credentials: None,
    })
}

/// Puts credentials into `props`, registering the secret parts for redaction first.
fn insert_credentials(
    props: &mut HashMap<String, String>,
    access_key_id: &str,
    secret_access_key: &str,
    session_token: Option<&str>,
) {
    crate::secrets::register_rotating(secret_access_key);
    props.insert(S3_ACCESS_KEY_ID.to_string(), access_key_id.to_string());
    props.insert(
        S3_SECRET_ACCESS_KEY.to_string(),
        secret_access_key.to_string(),
    );
    if let Some(token) = session_token {
        crate::secrets::register_rotating(token);
        props.insert(S3_SESSION_TOKEN.to_string(), token.to_string());
    }
}
