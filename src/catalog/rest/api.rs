//! The HTTP side of a REST catalog: every request this engine sends to it (reads, creates and
//! commits alike) is built here, with the catalog's authentication (a bearer token or a SigV4
//! signature) and its extra headers, so no request leaves unauthenticated or signed twice.

use std::collections::BTreeMap;

use reqwest::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::body::{read_capped, MAX_BODY};
use super::oauth::OAuth2;
use super::sigv4::SigV4;

/// How requests prove who sends them.
pub(super) enum Auth {
    /// Nothing (a server without authentication, or one behind a trusted network).
    Anonymous,
    /// `Authorization: Bearer TOKEN`.
    Bearer(String),
    /// `Authorization: Bearer TOKEN` with an OAuth2 token kept fresh (and replaced once when
    /// the catalog refuses it).
    OAuth2(OAuth2),
    /// An AWS Signature Version 4 on every request (S3 Tables, Glue, API Gateway).
    SigV4(SigV4),
}

/// Raw REST requests to one catalog.
pub(super) struct RestApi {
    http: reqwest::Client,
    /// The base URI (without `/v1`).
    pub(super) uri: String,
    /// The catalog as messages name it: the URI and the spec's warehouse.
    pub(super) identity: String,
    auth: Auth,
    headers: BTreeMap<String, String>,
    /// The route prefix the server's `/v1/config` gave (empty for none).
    pub(super) prefix: String,
}

/// A REST response that was not a success, or a request that got no response.
pub(super) struct Refused {
    pub(super) status: StatusCode,
    /// The server's `error.message` (or the start of its body), or why nothing came back.
    pub(super) message: String,
    /// The server's `error.type` (e.g. `NoSuchTableException`, `SignatureDoesNotMatch`).
    pub(super) kind: String,
    /// Whether the server answered; `false` when the request could not be built or signed
    /// (missing credentials), sent, or its answer read: `message` then says why, and
    /// `status` is 503 (worth trying again) only for the code that retries.
    pub(super) answered: bool,
}

impl Refused {
    /// What went wrong, for messages: the server's status and words, or why no answer came.
    pub(super) fn reason(&self) -> String {
        if !self.answered {
            return self.message.clone();
        }
        match self.kind.as_str() {
            "" => format!("{} {}", self.status, self.message),
            kind => format!("{} {kind}: {}", self.status, self.message),
        }
    }
}

impl RestApi {
    pub(super) fn new(
        http: reqwest::Client,
        uri: String,
        auth: Auth,
        headers: BTreeMap<String, String>,
    ) -> RestApi {
        RestApi {
            http,
            identity: uri.clone(),
            uri,
            auth,
            headers,
            prefix: String::new(),
        }
    }

    /// Whether requests are signed with SigV4 (for messages).
    pub(super) fn signs(&self) -> bool {
        matches!(self.auth, Auth::SigV4(_))
    }

    /// For a request the catalog refused as unauthenticated (401, 403): the sentence every
    /// error about it carries, saying what to check for this catalog's authentication; `None`
    /// for any other refusal.
    pub(super) fn refusal(&self, r: &Refused) -> Option<String> {
        if !matches!(r.status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            return None;
        }
        Some(if self.signs() {
            format!(
                "the catalog refused this client's SigV4 signature ({} {}): check the AWS credentials (profile, access_key_id_env / secret_access_key_env, or the environment), `region` and `signing_name`",
                r.status, r.message
            )
        } else {
            format!(
                "the catalog refused this client's credentials ({}): check the variables named by token_env / credential_env",
                r.status
            )
        })
    }

    /// `{uri}/v1/{prefix}{path}` for a path such as `/namespaces`.
    pub(super) fn url(&self, path: &str) -> String {
        let prefix = if self.prefix.is_empty() {
            String::new()
        } else {
            format!("/{}", self.prefix)
        };
        format!("{}/v1{prefix}{path}", self.uri)
    }

    /// Sends one request to `url` with `body` as JSON; returns the response's JSON (`Null`
    /// when empty). A non-success status is [`Refused`].
    pub(super) async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> std::result::Result<Value, Refused> {
        let what = format!("{method} {url}");
        let unavailable = |message: String| Refused {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message,
            kind: String::new(),
            answered: false,
        };
        let (request, token) = self
            .build(method.clone(), url, body, None)
            .await
            .map_err(|e| unavailable(format!("{what}: {e}")))?;
        let mut response = self
            .http
            .execute(request)
            .await
            .map_err(|e| unavailable(format!("{what}: {e}")))?;
        if let (Auth::OAuth2(oauth), Some(refused)) = (&self.auth, token) {
            if response.status() == StatusCode::UNAUTHORIZED {
                // The token expired early or was revoked: once more with a new one.
                let fresh = oauth
                    .replace(&refused)
                    .await
                    .map_err(|e| unavailable(format!("{what}: {e}")))?;
                let (request, _) = self
                    .build(method, url, body, Some(fresh))
                    .await
                    .map_err(|e| unavailable(format!("{what}: {e}")))?;
                response = self
                    .http
                    .execute(request)
                    .await
                    .map_err(|e| unavailable(format!("{what}: {e}")))?;
            }
        }
        let status = response.status();
        if status.is_redirection() {
            return Err(redirected(status, &response));
        }
        let text = read_capped(response, MAX_BODY)
            .await
            .map_err(|e| unavailable(format!("{what}: {e}")))?;
        let parsed: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::Null)
        };
        if status.is_success() {
            return Ok(parsed);
        }
        let field = |name: &str| parsed["error"][name].as_str().map(str::to_string);
        Err(Refused {
            status,
            // The server's words, redacted: an endpoint refusing a signature may echo the
            // canonical request, session token included.
            message: crate::secrets::redact(
                &field("message")
                    .or_else(|| parsed["message"].as_str().map(str::to_string))
                    .unwrap_or_else(|| text.chars().take(300).collect::<String>()),
            )
            .into_owned(),
            kind: field("type").unwrap_or_default(),
            answered: true,
        })
    }

    /// The request with its headers, body and authentication (`token`, or the current
    /// OAuth2 token), and the OAuth2 token it carries.
    async fn build(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        token: Option<String>,
    ) -> std::result::Result<(reqwest::Request, Option<String>), String> {
        let mut builder = self.http.request(method, url);
        for (name, value) in &self.headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|e| format!("header name `{name}`: {e}"))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|e| format!("header `{name}`: {e}"))?;
            builder = builder.header(name, value);
        }
        if let Some(body) = body {
            builder = builder
                .header(CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(body).map_err(|e| e.to_string())?);
        }
        let oauth = match (&self.auth, token) {
            (Auth::OAuth2(_), Some(token)) => Some(token),
            (Auth::OAuth2(oauth), None) => Some(oauth.token().await?),
            _ => None,
        };
        match (&self.auth, &oauth) {
            (Auth::Bearer(token), _) | (_, Some(token)) => builder = builder.bearer_auth(token),
            _ => {}
        }
        let mut request = builder.build().map_err(|e| e.to_string())?;
        if let Auth::SigV4(signer) = &self.auth {
            signer.sign(&mut request).await?;
        }
        Ok((request, oauth))
    }

    /// `GET` of a path under the prefix.
    pub(super) async fn get(&self, path: &str) -> std::result::Result<Value, Refused> {
        self.send(Method::GET, &self.url(path), None).await
    }

    /// `POST` of `body` to a path under the prefix.
    pub(super) async fn post(
        &self,
        path: &str,
        body: &Value,
    ) -> std::result::Result<Value, Refused> {
        self.send(Method::POST, &self.url(path), Some(body)).await
    }
}

/// A redirect, refused: it is never followed, so credentials (a token, a signature's session
/// token, the spec's `headers`, an OAuth2 form) never go to an address the spec did not name.
fn redirected(status: StatusCode, response: &reqwest::Response) -> Refused {
    let to = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .unwrap_or("an address it did not give");
    Refused {
        status,
        message: format!(
            "the server redirects to {to}; redirects are not followed (credentials never go to an address the spec does not name): set `uri` to the address the catalog is served at"
        ),
        kind: "Redirect".into(),
        answered: true,
    }
}

/// Percent-encodes `text` for a URL path segment or query value: everything but the unreserved
/// characters, so a `+` or a space can never be read two ways (SigV4 signs the encoded form).
pub(super) fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
