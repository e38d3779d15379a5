//! How a REST catalog's requests are authenticated, as its spec section says: a bearer token
//! from the variable `token_env` names, one exchanged for the OAuth2 client credential that
//! `credential_env` names, a SigV4 signature (`signing = "sigv4"`), or nothing.

use std::collections::HashMap;

use aws_credential_types::provider::SharedCredentialsProvider;
use serde_json::Value;

use super::api::{read_capped, Auth};
use super::sigv4::SigV4;
use crate::catalog::storage;
use crate::error::{Error, Result};
use crate::spec::{read_env, RestConfig};

/// The largest token answer read.
const TOKEN_BODY: usize = 1 << 20;

/// The authentication of `config`'s requests, and the `FileIO` properties for its tables'
/// files. A signing catalog resolves its AWS credentials once here, for both.
pub(super) async fn authenticate(
    config: &RestConfig,
    http: &reqwest::Client,
) -> Result<(Auth, HashMap<String, String>)> {
    let fail = |message: String| Error::Catalog {
        catalog: config.uri.clone(),
        message,
    };
    if let Some(signing) = &config.signing {
        let sdk = storage::sdk_config(&config.uri, &config.storage, None).await?;
        let provider: SharedCredentialsProvider = sdk.credentials_provider().ok_or_else(|| {
            fail("no AWS credential provider to sign catalog requests with".into())
        })?;
        let file_props = storage::file_io_props(&config.uri, &config.storage, &sdk, false).await?;
        let signer = SigV4::new(provider, signing.region.clone(), signing.name.clone());
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
            let token = oauth_token(http, config, &credential).await.map_err(fail)?;
            Ok((Auth::Bearer(token), file_props))
        }
        None => Ok((Auth::Anonymous, file_props)),
    }
}

/// OAuth2 client-credentials exchange (`credential` = `id:secret`).
async fn oauth_token(
    http: &reqwest::Client,
    config: &RestConfig,
    credential: &str,
) -> std::result::Result<String, String> {
    let (id, secret) = credential
        .split_once(':')
        .ok_or("the OAuth2 credential must be CLIENT_ID:CLIENT_SECRET")?;
    crate::secrets::register(secret);
    let url = config
        .oauth2_server_uri
        .clone()
        .unwrap_or_else(|| format!("{}/v1/oauth/tokens", config.uri));
    let scope = config.scope.clone().unwrap_or_else(|| "catalog".into());
    let form = [
        ("grant_type", "client_credentials"),
        ("client_id", id),
        ("client_secret", secret),
        ("scope", &scope),
    ];
    let response = http
        .post(&url)
        .form(&form)
        .send()
        .await
        .map_err(|e| format!("OAuth2 token request to {url} failed: {e}"))?;
    let status = response.status();
    if status.is_redirection() {
        return Err(format!(
            "the OAuth2 token endpoint {url} redirects ({status}); redirects are not followed (the client secret never goes to an address the spec does not name): set `oauth2_server_uri` to the endpoint's own address"
        ));
    }
    let text = read_capped(response, TOKEN_BODY)
        .await
        .map_err(|e| format!("OAuth2 token request to {url} failed: {e}"))?;
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    match body["access_token"].as_str() {
        Some(t) if status.is_success() => {
            crate::secrets::register(t);
            Ok(t.to_string())
        }
        _ => Err(format!(
            "OAuth2 token request to {url} was refused ({status}): {}",
            body["error_description"]
                .as_str()
                .or(body["error"].as_str())
                .unwrap_or("no reason given")
        )),
    }
}
