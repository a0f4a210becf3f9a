//! The credentials one client presents to its agent: a fixed bearer token, an API key in the
//! header the agent's card names, or an OAuth2 access token from a [`TokenSource`]; and the one
//! retry after the agent refuses an access token.

use std::sync::Arc;

use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};

use super::ClientError;
use super::http::transport;
use super::oauth2::TokenSource;

/// What a client presents on every request. Its Debug prints which kinds, never a value.
#[derive(Clone, Default)]
pub(super) struct Credentials {
    pub(super) bearer: Option<String>,
    pub(super) api_key: Option<(HeaderName, HeaderValue)>,
    pub(super) oauth2: Option<Arc<TokenSource>>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("bearer", &self.bearer.as_ref().map(|_| "[redacted]"))
            .field("api_key", &self.api_key.as_ref().map(|(name, _)| name))
            .field("oauth2", &self.oauth2.is_some())
            .finish()
    }
}

impl Credentials {
    /// Sends the request `build` makes with the credentials on it. When the agent answers 401
    /// to an OAuth2 access token, the token is dropped, a new one fetched and the request sent
    /// once more: a token revoked or expired early costs one retry, not a failed call. Any
    /// other answer is returned as it is.
    pub(super) async fn send(
        &self,
        url: &str,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ClientError> {
        let (request, token) = self.apply(build()).await?;
        let response = request.send().await.map_err(transport(url))?;
        let (Some(source), Some(token)) = (&self.oauth2, token) else {
            return Ok(response);
        };
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        tracing::debug!(%url, "agents: the agent refused the OAuth2 access token; fetching a new one");
        source.reject(&token).await;
        let (request, _) = self.apply(build()).await?;
        request.send().await.map_err(transport(url))
    }

    /// The request with every credential on it, and the access token used, if any.
    async fn apply(
        &self,
        mut request: reqwest::RequestBuilder,
    ) -> Result<(reqwest::RequestBuilder, Option<String>), ClientError> {
        if let Some((name, value)) = &self.api_key {
            request = request.header(name.clone(), value.clone());
        }
        let mut used = None;
        if let Some(source) = &self.oauth2 {
            let token = source.token().await.map_err(ClientError::Credentials)?;
            request = request.header(AUTHORIZATION, sensitive(&format!("Bearer {token}")));
            used = Some(token);
        } else if let Some(token) = &self.bearer {
            request = request.header(AUTHORIZATION, sensitive(&format!("Bearer {token}")));
        }
        Ok((request, used))
    }

    /// Masks every secret these credentials hold or have held in `text`.
    pub(super) fn mask(&self, text: &str) -> String {
        match &self.oauth2 {
            Some(source) => source.mask(text),
            None => text.to_string(),
        }
    }
}

/// A header value marked sensitive (kept out of HTTP/2 header tables and Debug output). An
/// unusable value (a newline in a token) becomes an empty one the agent refuses, never a
/// panic; the token sources and the configuration check refuse such values before.
pub(super) fn sensitive(value: &str) -> HeaderValue {
    let mut value = HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static(""));
    value.set_sensitive(true);
    value
}

/// The secrets configured for one agent beyond its bearer token, read from the environment at
/// start-up: given to the client only when the agent's card asks for them. Its Debug prints
/// which are set, never a value.
#[derive(Clone, Default)]
pub struct AgentSecrets {
    /// The value of `agents[].api_key_env`.
    pub api_key: Option<String>,
    /// The token source of `[agents.oauth2]`, shared by every client of the agent so its
    /// tokens are fetched once.
    pub oauth2: Option<Arc<TokenSource>>,
}

impl std::fmt::Debug for AgentSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSecrets")
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("oauth2", &self.oauth2)
            .finish()
    }
}
