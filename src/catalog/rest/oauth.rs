//! OAuth2 client credentials for a REST catalog: a token fetched from the token endpoint and
//! kept fresh for however long the connection lives (a run that stages for hours, a lease
//! renewer). Guarantees:
//! - a token is fetched again before it expires: when less than a quarter of its life (at most
//!   five minutes) is left, so a token issued for a short time is not fetched on every request;
//! - a token the catalog refuses (401) is replaced once, and the request sent again
//!   ([`OAuth2::replace`]);
//! - a fetch that fails while the current token is still valid keeps that token (with a
//!   warning); a fetch never waits more than [`FETCH_TIMEOUT`];
//! - the client secret and every token are registered as secrets (never printed).

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Mutex;

use super::body::read_capped;

/// The largest token answer read.
const TOKEN_BODY: usize = 1 << 20;
/// The longest a token request may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// A token is fetched again this long before it expires at most (a quarter of its life when
/// that is shorter).
const REFRESH_BEFORE: Duration = Duration::from_secs(300);

/// A token and when it stops being good.
struct Token {
    value: String,
    /// When it should be fetched again (`None`: the endpoint gave no `expires_in`).
    refresh_at: Option<Instant>,
    /// When it expires (`None`: unknown).
    expires_at: Option<Instant>,
}

/// Tokens for one catalog's requests.
pub(super) struct OAuth2 {
    http: reqwest::Client,
    /// The token endpoint.
    url: String,
    id: String,
    secret: String,
    scope: String,
    current: Mutex<Option<Token>>,
}

impl OAuth2 {
    /// For the client `credential` (`CLIENT_ID:CLIENT_SECRET`) at the token endpoint `url`.
    pub(super) fn new(
        http: reqwest::Client,
        url: String,
        credential: &str,
        scope: String,
    ) -> Result<OAuth2, String> {
        let (id, secret) = credential
            .split_once(':')
            .ok_or("the OAuth2 credential must be CLIENT_ID:CLIENT_SECRET")?;
        crate::secrets::register(secret);
        Ok(OAuth2 {
            http,
            url,
            id: id.to_string(),
            secret: secret.to_string(),
            scope,
            current: Mutex::new(None),
        })
    }

    /// The token to send now: the current one unless it is due for renewal.
    pub(super) async fn token(&self) -> Result<String, String> {
        let mut current = self.current.lock().await;
        let now = Instant::now();
        if let Some(t) = current.as_ref() {
            if t.refresh_at.is_none_or(|at| now < at) {
                return Ok(t.value.clone());
            }
        }
        self.renew(&mut current).await
    }

    /// After the catalog refused `refused` (401): a new token, unless another request
    /// already replaced it.
    pub(super) async fn replace(&self, refused: &str) -> Result<String, String> {
        let mut current = self.current.lock().await;
        if let Some(t) = current.as_ref().filter(|t| t.value != refused) {
            return Ok(t.value.clone());
        }
        *current = None;
        self.renew(&mut current).await
    }

    /// Fetches a token into `current`; on failure keeps a current one that has not expired.
    async fn renew(&self, current: &mut Option<Token>) -> Result<String, String> {
        match tokio::time::timeout(FETCH_TIMEOUT, self.fetch()).await {
            Ok(Ok(token)) => {
                let value = token.value.clone();
                *current = Some(token);
                Ok(value)
            }
            failed => {
                let why = match failed {
                    Ok(Err(why)) => why,
                    _ => format!(
                        "OAuth2 token request to {} took more than {}s",
                        self.url,
                        FETCH_TIMEOUT.as_secs()
                    ),
                };
                match current
                    .as_ref()
                    .filter(|t| t.expires_at.is_none_or(|at| Instant::now() < at))
                {
                    Some(valid) => {
                        tracing::warn!("{why}; the current token is still valid and is kept");
                        Ok(valid.value.clone())
                    }
                    None => Err(why),
                }
            }
        }
    }

    /// One client-credentials exchange.
    async fn fetch(&self) -> Result<Token, String> {
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", self.id.as_str()),
            ("client_secret", self.secret.as_str()),
            ("scope", self.scope.as_str()),
        ];
        let url = &self.url;
        let asked = Instant::now();
        let response = self
            .http
            .post(url)
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
                crate::secrets::register_rotating(t);
                Ok(token(t, body["expires_in"].as_u64(), asked))
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
}

/// A token `value` asked for at `asked`, good for `expires_in` seconds.
fn token(value: &str, expires_in: Option<u64>, asked: Instant) -> Token {
    let life = expires_in.map(Duration::from_secs);
    Token {
        value: value.to_string(),
        refresh_at: life.map(|life| asked + life - (life / 4).min(REFRESH_BEFORE)),
        expires_at: life.map(|life| asked + life),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_renewed_a_quarter_of_its_life_before_it_expires_at_most_five_minutes() {
        let at = Instant::now();
        let hour = token("t", Some(3600), at);
        assert_eq!(hour.refresh_at, Some(at + Duration::from_secs(3300)));
        let short = token("t", Some(8), at);
        assert_eq!(short.refresh_at, Some(at + Duration::from_secs(6)));
        assert_eq!(short.expires_at, Some(at + Duration::from_secs(8)));
        assert!(token("t", None, at).refresh_at.is_none());
    }
}
