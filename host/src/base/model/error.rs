//! Why a model call failed, said twice: in full for the operator's log (the endpoint's own words,
//! already cleaned by [`Redactor`]), and as a public reason for whoever reads the task (an A2A
//! client, a parent's model), which names what failed and never repeats the endpoint's words, a
//! URL or a secret.

use super::redact::Redactor;

/// Why a model call failed. `Display` is the detail for the log; [`ModelError::public_reason`]
/// is what a task's failure says.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The message names the settings to set, never their values, so it is also the public
    /// reason.
    #[error("no model is configured: {0}")]
    NotConfigured(String),
    /// `body` is the endpoint's answer, kept for the log only (cleaned by the provider).
    #[error("model endpoint answered HTTP {status}{}: {body}", after(*.retries))]
    Http {
        /// The HTTP status: it says whose move it is (401 and 403: the key; 429 and 5xx: retry).
        status: u16,
        /// The endpoint's answer, cleaned, for the log only.
        body: String,
        /// Retries made before this answer ended the call.
        retries: u32,
    },
    /// No answer within `model.timeout`.
    #[error("model call timed out after {secs} s{}", after(*.retries))]
    Timeout {
        /// The timeout that ran out (`model.timeout`).
        secs: u64,
        /// Retries made before the last attempt timed out.
        retries: u32,
    },
    /// `detail` is the connection error without its URL, for the log only.
    #[error("could not reach the model endpoint{}: {detail}", after(*.retries))]
    Transport {
        /// The connection error, its URL removed and cleaned, for the log only.
        detail: String,
        /// Retries made before the last attempt failed to connect.
        retries: u32,
    },
    /// The detail may quote the answer, for the log only.
    #[error("the model's answer could not be read: {0}")]
    InvalidResponse(String),
    /// A scripted model was asked for more replies than its script holds: the script, not the
    /// task, is what to fix, so the message is also the public reason.
    #[error("the scripted model has no reply {index} (the script has {len})")]
    ScriptExhausted {
        /// The reply asked for, counted from 0.
        index: usize,
        /// How many replies the script has.
        len: usize,
    },
}

impl ModelError {
    /// Whether a retry may succeed: rate limits, server errors, timeouts and broken connections.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Http { status, .. } => *status == 429 || *status >= 500,
            ModelError::Timeout { .. } | ModelError::Transport { .. } => true,
            _ => false,
        }
    }

    /// The error of a call that ended after `count` retries.
    pub fn after_retries(mut self, count: u32) -> ModelError {
        if let ModelError::Http { retries, .. }
        | ModelError::Timeout { retries, .. }
        | ModelError::Transport { retries, .. } = &mut self
        {
            *retries = count;
        }
        self
    }

    /// What a task that failed on this error says to whoever reads it: an A2A client, and the
    /// model of a parent task. It names what failed (and the HTTP status, which says whose move
    /// it is) but never the endpoint's body, its URL or any secret; those go to the log.
    pub fn public_reason(&self) -> String {
        match self {
            ModelError::NotConfigured(_) | ModelError::ScriptExhausted { .. } => self.to_string(),
            ModelError::Http { status: 401, .. } => {
                "the model endpoint refused the API key (HTTP 401)".to_string()
            }
            ModelError::Http { status: 403, .. } => {
                "the model endpoint denied access to this API key (HTTP 403)".to_string()
            }
            ModelError::Http {
                status, retries, ..
            } => format!(
                "the model endpoint answered HTTP {status}{}",
                after(*retries)
            ),
            ModelError::Timeout { secs, retries: 0 } => {
                format!("the model call timed out after {secs} s")
            }
            ModelError::Timeout { secs, retries } => format!(
                "the model call timed out after {secs} s, on the last of {} attempts",
                u64::from(*retries) + 1
            ),
            ModelError::Transport { retries, .. } => {
                format!("the model endpoint could not be reached{}", after(*retries))
            }
            ModelError::InvalidResponse(_) => "the model's answer could not be read".to_string(),
        }
    }

    /// The error with the endpoint's text cleaned by `redactor`: the secrets masked, the text
    /// capped and escaped. Applied once, where a provider's call ends.
    pub fn redacted(self, redactor: &Redactor) -> ModelError {
        match self {
            ModelError::Http {
                status,
                body,
                retries,
            } => ModelError::Http {
                status,
                body: redactor.clean(&body),
                retries,
            },
            ModelError::Transport { detail, retries } => ModelError::Transport {
                detail: redactor.clean(&detail),
                retries,
            },
            ModelError::InvalidResponse(detail) => {
                ModelError::InvalidResponse(redactor.clean(&detail))
            }
            other => other,
        }
    }
}

/// ` after N retries`, or nothing when there were none.
fn after(retries: u32) -> String {
    match retries {
        0 => String::new(),
        1 => " after 1 retry".to_string(),
        n => format!(" after {n} retries"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retries: u32) -> ModelError {
        ModelError::Http {
            status,
            body: "sk-secret echoed by http://10.0.0.7/v1".into(),
            retries,
        }
    }

    /// The public reasons, whole: an A2A client and a parent's model read them.
    #[test]
    fn public_reasons_name_what_failed_in_fixed_words() {
        let cases = [
            (
                http(401, 0),
                "the model endpoint refused the API key (HTTP 401)",
            ),
            (
                http(403, 0),
                "the model endpoint denied access to this API key (HTTP 403)",
            ),
            (http(400, 0), "the model endpoint answered HTTP 400"),
            (
                http(503, 3),
                "the model endpoint answered HTTP 503 after 3 retries",
            ),
            (
                http(429, 1),
                "the model endpoint answered HTTP 429 after 1 retry",
            ),
            (
                ModelError::Timeout {
                    secs: 60,
                    retries: 0,
                },
                "the model call timed out after 60 s",
            ),
            (
                ModelError::Timeout {
                    secs: 60,
                    retries: 3,
                },
                "the model call timed out after 60 s, on the last of 4 attempts",
            ),
            (
                ModelError::Transport {
                    detail: "tcp connect error to http://10.0.0.7".into(),
                    retries: 0,
                },
                "the model endpoint could not be reached",
            ),
            (
                ModelError::Transport {
                    detail: String::new(),
                    retries: 2,
                },
                "the model endpoint could not be reached after 2 retries",
            ),
            (
                ModelError::InvalidResponse("not JSON: sk-secret".into()),
                "the model's answer could not be read",
            ),
            (
                ModelError::ScriptExhausted { index: 1, len: 1 },
                "the scripted model has no reply 1 (the script has 1)",
            ),
            (
                ModelError::NotConfigured("set OPENAI_API_KEY".into()),
                "no model is configured: set OPENAI_API_KEY",
            ),
        ];
        for (error, reason) in cases {
            assert_eq!(error.public_reason(), reason, "{error:?}");
        }
    }

    #[test]
    fn the_log_detail_keeps_the_cleaned_body_and_the_retries() {
        let redactor = Redactor::new(Some("sk-secret"));
        let error = http(500, 2).redacted(&redactor);
        assert_eq!(
            error.to_string(),
            "model endpoint answered HTTP 500 after 2 retries: [redacted] echoed by http://10.0.0.7/v1"
        );
        assert!(!error.public_reason().contains("10.0.0.7"));
    }

    #[test]
    fn only_the_retryable_kinds_take_a_retry_count() {
        let timeout = ModelError::Timeout {
            secs: 5,
            retries: 0,
        };
        assert!(matches!(
            timeout.after_retries(2),
            ModelError::Timeout { retries: 2, .. }
        ));
        let invalid = ModelError::InvalidResponse("x".into()).after_retries(2);
        assert_eq!(
            invalid.public_reason(),
            "the model's answer could not be read"
        );
        assert!(http(503, 0).is_retryable() && http(429, 0).is_retryable());
        assert!(!http(401, 0).is_retryable() && !http(404, 0).is_retryable());
    }
}
