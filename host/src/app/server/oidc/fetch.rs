//! Fetching the issuer's discovery document and JWKS: only from the configured or discovered
//! URL, under a timeout, with the body capped, and never following a redirect elsewhere.

use std::time::Duration;

use reqwest::header::ACCEPT;
use serde_json::Value;

use crate::base::config::OidcConfig;
use crate::base::config::oidc::check_key_url;
use crate::base::http_body::{Body, read_capped};

/// The largest discovery document read: real ones are a few kilobytes.
pub const MAX_DISCOVERY_BYTES: usize = 64 * 1024;
/// The largest JWKS read: a few keys of a few hundred bytes each, with room for many.
pub const MAX_JWKS_BYTES: usize = 256 * 1024;

/// Why the discovery document or the JWKS could not be had. The messages name the URL (from
/// configuration or the discovery document) and never quote the body.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The request failed, timed out, or the body could not be read.
    #[error("{url}: request failed: {reason}")]
    Request {
        /// The URL asked.
        url: String,
        /// Why, as the HTTP client says it (no body).
        reason: String,
    },
    /// The answer was not a success.
    #[error("{url}: HTTP {status}")]
    Status {
        /// The URL asked.
        url: String,
        /// The status answered.
        status: u16,
    },
    /// The client followed a redirect: keys are read only from the URL asked.
    #[error(
        "{url}: answered from another URL after a redirect; keys are read only from the URL configured or discovered"
    )]
    Redirected {
        /// The URL asked.
        url: String,
    },
    /// The body was longer than its cap.
    #[error("{url}: the body is larger than {limit} bytes")]
    TooLarge {
        /// The URL asked.
        url: String,
        /// The cap.
        limit: usize,
    },
    /// The body is not the JSON expected.
    #[error("{url}: {reason}")]
    Invalid {
        /// The URL asked.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// GETs `url` as JSON, under `timeout` and `limit`.
pub async fn fetch_json(
    client: &reqwest::Client,
    url: &str,
    timeout: Duration,
    limit: usize,
) -> Result<Value, FetchError> {
    let request_failed = |err: reqwest::Error| FetchError::Request {
        url: url.to_string(),
        reason: err.without_url().to_string(),
    };
    let mut response = client
        .get(url)
        .header(ACCEPT, "application/json")
        .timeout(timeout)
        .send()
        .await
        .map_err(request_failed)?;
    if response.url().as_str()
        != reqwest::Url::parse(url)
            .map(String::from)
            .unwrap_or_default()
    {
        return Err(FetchError::Redirected {
            url: url.to_string(),
        });
    }
    if !response.status().is_success() {
        return Err(FetchError::Status {
            url: url.to_string(),
            status: response.status().as_u16(),
        });
    }
    let bytes = match tokio::time::timeout(timeout, read_capped(&mut response, limit)).await {
        Ok(Ok(Body::Whole(bytes))) => bytes,
        Ok(Ok(Body::Cut(_))) => {
            return Err(FetchError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        Ok(Err(err)) => return Err(request_failed(err)),
        Err(_) => {
            return Err(FetchError::Request {
                url: url.to_string(),
                reason: "timed out reading the body".to_string(),
            });
        }
    };
    serde_json::from_slice(&bytes).map_err(|err| FetchError::Invalid {
        url: url.to_string(),
        reason: format!("not JSON: {err}"),
    })
}

/// The JWKS URL: `jwks_url` when configured, else the `jwks_uri` of the issuer's discovery
/// document, which must name the configured issuer (Discovery §4.3) and pass the same URL rule
/// as the configured one.
pub async fn jwks_url(
    config: &OidcConfig,
    client: &reqwest::Client,
    timeout: Duration,
) -> Result<String, FetchError> {
    if let Some(url) = &config.jwks_url {
        return Ok(url.clone());
    }
    let url = config.discovery_url();
    let document = fetch_json(client, &url, timeout, MAX_DISCOVERY_BYTES).await?;
    let invalid = |reason: String| FetchError::Invalid {
        url: url.clone(),
        reason,
    };
    let issuer = document.get("issuer").and_then(Value::as_str);
    if issuer.map(|i| i.trim_end_matches('/')) != Some(config.issuer.trim_end_matches('/')) {
        return Err(invalid(
            "the discovery document's `issuer` is not server.oidc.issuer".to_string(),
        ));
    }
    let Some(jwks_uri) = document.get("jwks_uri").and_then(Value::as_str) else {
        return Err(invalid(
            "the discovery document has no `jwks_uri`; set server.oidc.jwks_url".to_string(),
        ));
    };
    check_key_url("jwks_uri", jwks_uri).map_err(|err| invalid(err.to_string()))?;
    Ok(jwks_uri.to_string())
}
