//! How a REST catalog's requests are authenticated, as its spec section says: a bearer token
//! from the variable `token_env` names, one exchanged for the OAuth2 client credential that
//! `credential_env` names, a SigV4 signature (`signing = "sigv4"`), or nothing.

use std::sync::Arc;

use aws_credential_types::provider::SharedCredentialsProvider;

use super::api::Auth;
use super::oauth::OAuth2;
use super::sigv4::{SigV4, SIGNING};
use crate::catalog::fresh_credentials::FreshCredentials;
use crate::catalog::storage::{self, S3Access};
use crate::error::{Error, Result};
use crate::spec::{read_env, RestConfig};

/// The authentication of `config`'s requests, and the S3 access for its tables' files. A
/// signing catalog's AWS credentials are kept fresh for both (each with its own cache).
pub(super) async fn authenticate(
    config: &RestConfig,
    http: &reqwest::Client,
) -> Result<(Auth, S3Access)> {
    let fail = |message: String| Error::Catalog {
        catalog: config.identity(),
        message,
    };
    if let Some(signing) = &config.signing {
        let sdk = storage::sdk_config(&config.uri, &config.storage, None).await?;
        let provider: SharedCredentialsProvider = sdk.credentials_provider().ok_or_else(|| {
            fail("no AWS credential provider to sign catalog requests with".into())
        })?;
        let file_props = storage::file_io_props(&config.uri, &config.storage, &sdk, false).await?;
        let credentials = Arc::new(FreshCredentials::new(provider, SIGNING));
        let signer = SigV4::new(credentials, signing.region.clone(), signing.name.clone());
        return Ok((Auth::SigV4(signer), file_props));
    }
    let file_props = storage::rest_file_io_props(&config.uri, &config.storage).await?;
    let token = config
        .token_env
        .as_deref()
        .map(read_env)
        .transpose()
        .map_err(fail)?;
    if let Some(token) = token {
        return Ok((Auth::Bearer(token), file_props));
    }
    let credential = config
        .credential_env
        .as_deref()
        .map(read_env)
        .transpose()
        .map_err(fail)?;
    match credential {
        Some(credential) => {
            let url = config
                .oauth2_server_uri
                .clone()
                .unwrap_or_else(|| format!("{}/v1/oauth/tokens", config.uri));
            let scope = config.scope.clone().unwrap_or_else(|| "catalog".into());
            let oauth = OAuth2::new(http.clone(), url, &credential, scope).map_err(fail)?;
            Ok((Auth::OAuth2(oauth), file_props))
        }
        None => Ok((Auth::Anonymous, file_props)),
    }
}
