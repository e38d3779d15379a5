//! Access to S3 for remote catalogs: the AWS SDK configuration (region, endpoint, credentials)
//! and the `FileIO` properties for data and metadata files.
//!
//! Credentials are resolved once, by the AWS SDK's standard chain (environment, shared
//! profile, SSO, instance or container role), or taken from the environment variables the spec
//! names. They are handed to the S3 client as properties and never logged or printed.

use std::collections::HashMap;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::provider::ProvideCredentials;
use aws_credential_types::Credentials;
use iceberg::io::{
    S3_ACCESS_KEY_ID, S3_ENDPOINT, S3_PATH_STYLE_ACCESS, S3_REGION, S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
};

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

/// `FileIO` properties for S3: endpoint, region, path style and the resolved credentials.
/// With `required` false, no credentials is not an error (a REST catalog may vend them).
pub async fn file_io_props(
    catalog: &str,
    storage: &S3Storage,
    sdk: &SdkConfig,
    required: bool,
) -> Result<HashMap<String, String>> {
    let mut props = HashMap::new();
    if let Some(endpoint) = &storage.endpoint {
        props.insert(S3_ENDPOINT.to_string(), endpoint.clone());
    }
    if let Some(region) = sdk.region() {
        props.insert(S3_REGION.to_string(), region.to_string());
    }
    if storage.path_style_access {
        props.insert(S3_PATH_STYLE_ACCESS.to_string(), "true".to_string());
    }
    let Some(provider) = sdk.credentials_provider() else {
        return Ok(props);
    };
    let credentials = match provider.provide_credentials().await {
        Ok(c) => c,
        Err(e) if !required => {
            tracing::debug!("no AWS credentials for storage ({e}); relying on the catalog");
            return Ok(props);
        }
        Err(e) => {
            return Err(Error::Catalog {
                catalog: catalog.to_string(),
                message: format!(
                    "no AWS credentials: {e}; set them in the environment (AWS_ACCESS_KEY_ID, ...), a profile, or name variables with access_key_id_env / secret_access_key_env"
                ),
            })
        }
    };
    props.insert(
        S3_ACCESS_KEY_ID.to_string(),
        credentials.access_key_id().to_string(),
    );
    crate::secrets::register(credentials.secret_access_key());
    if let Some(token) = credentials.session_token() {
        crate::secrets::register(token);
    }
    props.insert(
        S3_SECRET_ACCESS_KEY.to_string(),
        credentials.secret_access_key().to_string(),
    );
    if let Some(token) = credentials.session_token() {
        props.insert(S3_SESSION_TOKEN.to_string(), token.to_string());
    }
    Ok(props)
}
