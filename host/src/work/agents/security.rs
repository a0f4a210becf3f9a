//! What a remote card asks of its callers (`securitySchemes`, `securityRequirements`, in A2A
//! 1.0's protobuf-JSON names), matched at start-up against the credentials the operator
//! configured for the agent: which ones calls present ([`AgentAuth`]), or why the agent cannot
//! be called ([`SecurityProblem`], naming the setting to add).
//!
//! A requirement is a set of schemes that must all be met; the card's requirements are
//! alternatives, the first one met is used. A card that declares schemes but no requirement is
//! read as asking for any one of them. Only what is configured is presented: a card cannot make
//! the harness send a secret anywhere but to the agent's own interface, and the OAuth2 token URL
//! is the operator's, never the card's.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::card_check::quote;
use crate::base::config::AgentConfig;
use crate::base::protocol::card::AgentCard;
use crate::base::protocol::headers::{
    A2A_EXTENSIONS_HEADER, A2A_VERSION_HEADER, PARTICIPANT_HEADER,
};

/// Headers an API key may not be sent in: those the client sets itself, or that frame the
/// request. A card naming one would have the key replace the protocol's own header.
const RESERVED_HEADERS: [&str; 10] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "accept",
    "authorization",
    A2A_VERSION_HEADER,
    A2A_EXTENSIONS_HEADER,
    PARTICIPANT_HEADER,
];
/// How many unmet alternatives a refusal explains: enough to see what to configure, not so many
/// that a hostile card floods the log.
const MAX_EXPLAINED_ALTERNATIVES: usize = 3;

/// The credentials calls to one agent present, beyond the bearer token of `agents[].token_env`
/// (sent whenever it is configured, as it makes this harness a trusted delegator there).
/// Names only, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentAuth {
    /// The header the API key of `agents[].api_key_env` goes in, lower-case.
    pub api_key_header: Option<String>,
    /// Whether calls carry an access token of `[agents.oauth2]`.
    pub oauth2: bool,
}

/// Why a card's security cannot be met with what is configured. The text goes to the operator's
/// log and to `harness check`; it names settings and the card's scheme names (cleaned, quoted),
/// never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the card requires authentication this harness is not configured for: {0}")]
pub struct SecurityProblem(pub String);

/// What the agent's card asks for, and which of its skills can be used with what is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityPlan {
    /// The credentials every call presents.
    pub auth: AgentAuth,
    /// Ids of skills whose own requirements the chosen credentials do not meet: left out of the
    /// registered card, so the model is never offered them.
    pub unusable_skills: Vec<String>,
}

/// One declared scheme, as far as this harness can present it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scheme {
    /// `httpAuthSecurityScheme` with the `Bearer` scheme.
    Bearer,
    /// `apiKeySecurityScheme` in a header: its name, lower-case.
    ApiKeyHeader(String),
    /// `oauth2SecurityScheme` with a `clientCredentials` flow, or `openIdConnectSecurityScheme`
    /// (a provider's access token from client credentials is the bearer JWT such an agent
    /// checks): how it is named in a refusal.
    OAuth2(&'static str),
    /// Anything else: why it cannot be presented.
    Unsupported(String),
}

/// The credentials configured for one agent: which kinds, and the OAuth2 scopes.
struct Configured<'a> {
    prefix: String,
    bearer: bool,
    api_key: bool,
    oauth2_scopes: Option<&'a [String]>,
}

#[derive(Deserialize)]
struct Requirement {
    #[serde(default)]
    schemes: BTreeMap<String, Scopes>,
}

#[derive(Deserialize, Default)]
struct Scopes {
    #[serde(default)]
    list: Vec<String>,
}

type Alternative = Result<Vec<(String, Vec<String>)>, String>;

/// Matches `card` against the credentials of `agents[index]`. A card that declares no security
/// needs none.
pub fn plan_security(
    card: &AgentCard,
    index: usize,
    agent: &AgentConfig,
) -> Result<SecurityPlan, SecurityProblem> {
    let configured = Configured {
        prefix: format!("agents[{index}]"),
        bearer: agent.token_env.is_some(),
        api_key: agent.api_key_env.is_some(),
        oauth2_scopes: agent.oauth2.as_ref().map(|o| o.scopes.as_slice()),
    };
    let schemes: BTreeMap<&str, Scheme> = card
        .security_schemes
        .iter()
        .map(|(name, value)| (name.as_str(), scheme_of(value)))
        .collect();
    let mut alternatives: Vec<Alternative> =
        card.security_requirements.iter().map(requirement).collect();
    if alternatives.is_empty() {
        alternatives = schemes
            .keys()
            .map(|name| Ok(vec![(name.to_string(), Vec::new())]))
            .collect();
    }
    let auth = if alternatives.is_empty() {
        AgentAuth::default()
    } else {
        let mut reasons = Vec::new();
        let mut chosen = None;
        for alternative in &alternatives {
            match meet(alternative, &schemes, &configured) {
                Ok(auth) => {
                    chosen = Some(auth);
                    break;
                }
                Err(reason) => reasons.push(reason),
            }
        }
        match chosen {
            Some(auth) => auth,
            None => return Err(explain(reasons)),
        }
    };
    let unusable_skills = card
        .skills
        .iter()
        .filter(|skill| !skill.security_requirements.is_empty())
        .filter(|skill| {
            !skill.security_requirements.iter().any(|value| {
                meet(&requirement(value), &schemes, &configured)
                    .is_ok_and(|needs| is_covered(&needs, &auth))
            })
        })
        .map(|skill| skill.id.clone())
        .collect();
    Ok(SecurityPlan {
        auth,
        unusable_skills,
    })
}

/// Whether what `needs` asks is part of what `auth` sends.
fn is_covered(needs: &AgentAuth, auth: &AgentAuth) -> bool {
    (needs.api_key_header.is_none() || needs.api_key_header == auth.api_key_header)
        && (!needs.oauth2 || auth.oauth2)
}

fn requirement(value: &Value) -> Alternative {
    let parsed: Requirement = serde_json::from_value(value.clone())
        .map_err(|_| "a securityRequirements entry is not a SecurityRequirement".to_string())?;
    Ok(parsed
        .schemes
        .into_iter()
        .map(|(name, scopes)| (name, scopes.list))
        .collect())
}

/// What meeting one requirement takes, or why it cannot be met.
fn meet(
    alternative: &Alternative,
    schemes: &BTreeMap<&str, Scheme>,
    configured: &Configured,
) -> Result<AgentAuth, String> {
    let alternative = alternative.as_ref().map_err(Clone::clone)?;
    let prefix = &configured.prefix;
    let mut auth = AgentAuth::default();
    for (name, scopes) in alternative {
        let quoted = quote(name);
        let Some(scheme) = schemes.get(name.as_str()) else {
            return Err(format!(
                "scheme {quoted} is required but not declared in securitySchemes"
            ));
        };
        match scheme {
            Scheme::Bearer if configured.bearer => {}
            Scheme::Bearer => {
                return Err(format!(
                    "scheme {quoted} (HTTP Bearer) needs a token: set {prefix}.token_env"
                ));
            }
            Scheme::ApiKeyHeader(header) if configured.api_key => {
                if auth.api_key_header.as_ref().is_some_and(|h| h != header) {
                    return Err(format!(
                        "scheme {quoted} asks for a second API key; only one ({prefix}.api_key_env) can be configured"
                    ));
                }
                auth.api_key_header = Some(header.clone());
            }
            Scheme::ApiKeyHeader(header) => {
                return Err(format!(
                    "scheme {quoted} (an API key in the header {}) needs a key: set {prefix}.api_key_env",
                    quote(header)
                ));
            }
            Scheme::OAuth2(kind) => {
                let Some(granted) = configured.oauth2_scopes else {
                    return Err(format!(
                        "scheme {quoted} ({kind}) needs a client: set {prefix}.oauth2"
                    ));
                };
                if let Some(missing) = scopes.iter().find(|s| !granted.contains(s)) {
                    return Err(format!(
                        "scheme {quoted} needs the scope {}: add it to {prefix}.oauth2.scopes",
                        quote(missing)
                    ));
                }
                auth.oauth2 = true;
            }
            Scheme::Unsupported(why) => {
                return Err(format!(
                    "scheme {quoted} is {why}, which this harness cannot present"
                ));
            }
        }
    }
    Ok(auth)
}

/// One message for every unmet alternative (the first few), `; or ` between them.
fn explain(reasons: Vec<String>) -> SecurityProblem {
    let more = reasons.len().saturating_sub(MAX_EXPLAINED_ALTERNATIVES);
    let mut text = reasons
        .into_iter()
        .take(MAX_EXPLAINED_ALTERNATIVES)
        .collect::<Vec<_>>()
        .join("; or ");
    if more > 0 {
        text.push_str(&format!(" (and {more} more alternatives)"));
    }
    SecurityProblem(text)
}

/// A `SecurityScheme` by its `oneof` member, in its protobuf-JSON (lowerCamelCase) name or the
/// proto field name a protobuf parser accepts as well.
fn scheme_of(value: &Value) -> Scheme {
    let member = |camel: &str, snake: &str| value.get(camel).or_else(|| value.get(snake));
    let text = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if let Some(http) = member("httpAuthSecurityScheme", "http_auth_security_scheme") {
        let scheme = text(http, "scheme");
        return if scheme.eq_ignore_ascii_case("bearer") {
            Scheme::Bearer
        } else {
            Scheme::Unsupported(format!("HTTP {} authentication", quote(&scheme)))
        };
    }
    if let Some(key) = member("apiKeySecurityScheme", "api_key_security_scheme") {
        let location = text(key, "location");
        let name = text(key, "name").to_ascii_lowercase();
        if !location.eq_ignore_ascii_case("header") {
            return Scheme::Unsupported(format!(
                "an API key in the {} (only API keys in a header are supported)",
                quote(&location)
            ));
        }
        let valid = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok();
        if !valid || RESERVED_HEADERS.contains(&name.as_str()) {
            return Scheme::Unsupported(format!(
                "an API key in the header {}, a header this harness does not send a key in",
                quote(&name)
            ));
        }
        return Scheme::ApiKeyHeader(name);
    }
    if let Some(oauth2) = member("oauth2SecurityScheme", "oauth2_security_scheme") {
        let flows = oauth2.get("flows");
        let client_credentials = flows.and_then(|f| {
            f.get("clientCredentials")
                .or_else(|| f.get("client_credentials"))
        });
        return match client_credentials {
            Some(_) => Scheme::OAuth2("OAuth2 client credentials"),
            None => Scheme::Unsupported("OAuth2 without a client-credentials flow".to_string()),
        };
    }
    if member(
        "openIdConnectSecurityScheme",
        "open_id_connect_security_scheme",
    )
    .is_some()
    {
        return Scheme::OAuth2("OpenID Connect, met with OAuth2 client credentials");
    }
    if member("mtlsSecurityScheme", "mtls_security_scheme").is_some() {
        return Scheme::Unsupported("mutual TLS".to_string());
    }
    Scheme::Unsupported("a scheme of an unknown kind".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::config::OAuth2Config;
    use crate::base::protocol::card::{AgentSkill, default_card};
    use serde_json::json;

    fn agent(bearer: bool, api_key: bool, scopes: Option<&[&str]>) -> AgentConfig {
        AgentConfig {
            id: "ledger".into(),
            url: "http://x".into(),
            version: None,
            token_env: bearer.then(|| "T".to_string()),
            api_key_env: api_key.then(|| "K".to_string()),
            delegator: None,
            oauth2: scopes.map(|scopes| OAuth2Config {
                token_url: "https://auth.example/t".into(),
                client_id: "c".into(),
                client_secret_env: "S".into(),
                scopes: scopes.iter().map(|s| s.to_string()).collect(),
            }),
        }
    }

    fn card(schemes: Value, requirements: Value) -> AgentCard {
        let mut card = default_card("http://x");
        card.security_schemes = serde_json::from_value(schemes).unwrap();
        card.security_requirements = serde_json::from_value(requirements).unwrap();
        card
    }

    fn problem(card: &AgentCard, agent: &AgentConfig) -> String {
        plan_security(card, 0, agent).unwrap_err().to_string()
    }

    const BEARER: &str = "the card requires authentication this harness is not configured for: ";

    #[test]
    fn a_card_without_security_needs_nothing() {
        let plan = plan_security(&default_card("http://x"), 0, &agent(false, false, None)).unwrap();
        assert_eq!(plan.auth, AgentAuth::default());
        assert!(plan.unusable_skills.is_empty());
    }

    #[test]
    fn a_bearer_scheme_is_met_by_token_env_and_names_it_when_missing_golden() {
        let card = card(
            json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "opaque"}}}),
            json!([{"schemes": {"bearer": {"list": []}}}]),
        );
        assert_eq!(
            plan_security(&card, 0, &agent(true, false, None))
                .unwrap()
                .auth,
            AgentAuth::default()
        );
        assert_eq!(
            problem(&card, &agent(false, false, None)),
            format!(
                "{BEARER}scheme \"bearer\" (HTTP Bearer) needs a token: set agents[0].token_env"
            )
        );
    }

    #[test]
    fn an_api_key_goes_in_the_header_the_card_names_golden() {
        let card = card(
            json!({"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Ledger-Key"}}}),
            json!([]),
        );
        let plan = plan_security(&card, 0, &agent(false, true, None)).unwrap();
        assert_eq!(plan.auth.api_key_header.as_deref(), Some("x-ledger-key"));
        assert_eq!(
            problem(&card, &agent(true, false, None)),
            format!(
                "{BEARER}scheme \"key\" (an API key in the header \"x-ledger-key\") needs a key: set agents[0].api_key_env"
            )
        );
    }

    #[test]
    fn an_api_key_in_the_query_or_a_cookie_or_a_protocol_header_is_refused_golden() {
        for (location, name, why) in [
            (
                "query",
                "key",
                "an API key in the \"query\" (only API keys in a header are supported)",
            ),
            (
                "cookie",
                "key",
                "an API key in the \"cookie\" (only API keys in a header are supported)",
            ),
            (
                "header",
                "A2A-Version",
                "an API key in the header \"a2a-version\", a header this harness does not send a key in",
            ),
            (
                "header",
                "bad header\n",
                "an API key in the header \"bad header\", a header this harness does not send a key in",
            ),
        ] {
            let card = card(
                json!({"k": {"apiKeySecurityScheme": {"location": location, "name": name}}}),
                json!([{"schemes": {"k": {}}}]),
            );
            assert_eq!(
                problem(&card, &agent(false, true, None)),
                format!("{BEARER}scheme \"k\" is {why}, which this harness cannot present")
            );
        }
    }

    #[test]
    fn oauth2_client_credentials_need_the_client_and_every_required_scope_golden() {
        let card = card(
            json!({"oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://evil.example/t", "scopes": {"ledger.read": ""}}}}}}),
            json!([{"schemes": {"oauth": {"list": ["ledger.read"]}}}]),
        );
        let plan = plan_security(&card, 2, &agent(false, false, Some(&["ledger.read"]))).unwrap();
        assert!(plan.auth.oauth2);
        assert_eq!(
            plan_security(&card, 2, &agent(false, false, Some(&[])))
                .unwrap_err()
                .to_string(),
            format!(
                "{BEARER}scheme \"oauth\" needs the scope \"ledger.read\": add it to agents[2].oauth2.scopes"
            )
        );
        assert_eq!(
            plan_security(&card, 2, &agent(true, true, None))
                .unwrap_err()
                .to_string(),
            format!(
                "{BEARER}scheme \"oauth\" (OAuth2 client credentials) needs a client: set agents[2].oauth2"
            )
        );
    }

    #[test]
    fn an_openid_connect_scheme_is_met_by_oauth2_client_credentials_golden() {
        let card = card(
            json!({"oidc": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://idp.example/.well-known/openid-configuration"}}}),
            json!([{"schemes": {"oidc": {"list": []}}}]),
        );
        assert!(
            plan_security(&card, 0, &agent(false, false, Some(&[])))
                .unwrap()
                .auth
                .oauth2
        );
        assert_eq!(
            problem(&card, &agent(true, false, None)),
            format!(
                "{BEARER}scheme \"oidc\" (OpenID Connect, met with OAuth2 client credentials) needs a client: set agents[0].oauth2"
            )
        );
    }

    #[test]
    fn the_first_requirement_met_is_used_and_unmet_ones_are_all_explained() {
        let card = card(
            json!({
                "mtls": {"mtlsSecurityScheme": {}},
                "key": {"api_key_security_scheme": {"location": "header", "name": "x-key"}},
                "basic": {"httpAuthSecurityScheme": {"scheme": "Basic"}}
            }),
            json!([{"schemes": {"mtls": {}}}, {"schemes": {"basic": {}}}, {"schemes": {"key": {}}}]),
        );
        let plan = plan_security(&card, 0, &agent(false, true, None)).unwrap();
        assert_eq!(plan.auth.api_key_header.as_deref(), Some("x-key"));
        assert_eq!(
            problem(&card, &agent(false, false, None)),
            format!(
                "{BEARER}scheme \"mtls\" is mutual TLS, which this harness cannot present; or scheme \"basic\" is HTTP \"Basic\" authentication, which this harness cannot present; or scheme \"key\" (an API key in the header \"x-key\") needs a key: set agents[0].api_key_env"
            )
        );
    }

    #[test]
    fn hostile_scheme_names_are_cleaned_and_cut_in_the_refusal() {
        let name = format!("\u{1b}[31m{}", "n".repeat(500));
        let card = card(
            json!({ name.clone(): {"mtlsSecurityScheme": {}} }),
            json!([]),
        );
        let text = problem(&card, &agent(true, true, None));
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.len() < 400, "{text}");
        assert!(
            text.ends_with("is mutual TLS, which this harness cannot present"),
            "{text}"
        );
    }

    #[test]
    fn a_skill_whose_requirements_the_chosen_credentials_miss_is_unusable() {
        let mut card = card(
            json!({
                "bearer": {"httpAuthSecurityScheme": {"scheme": "bearer"}},
                "key": {"apiKeySecurityScheme": {"location": "header", "name": "x-key"}}
            }),
            json!([{"schemes": {"bearer": {}}}]),
        );
        let skill = |id: &str, requirements: Value| AgentSkill {
            id: id.into(),
            name: id.into(),
            security_requirements: serde_json::from_value(requirements).unwrap(),
            ..AgentSkill::default()
        };
        card.skills = vec![
            skill("open", json!([])),
            skill("keyed", json!([{"schemes": {"key": {}}}])),
            skill(
                "either",
                json!([{"schemes": {"key": {}}}, {"schemes": {"bearer": {}}}]),
            ),
        ];
        let plan = plan_security(&card, 0, &agent(true, false, None)).unwrap();
        assert_eq!(plan.unusable_skills, ["keyed"]);
    }
}
