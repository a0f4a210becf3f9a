//! What the operator commands print (`harness check`, `harness plugins`, `harness context`):
//! each builds what `serve` would (model, agents, skills, plugins) without serving, and reports
//! it.

use std::fmt::Write;
use std::sync::Arc;

use crate::app::runtime::{
    FromEnvironment, StartError, connect_tools, load_skills, plugin_settings, prompt_context,
    render_context,
};
use crate::base::config::Config;
use crate::base::text::log_field::escape;
use crate::work::agents::{Discovery, Registry, Roster, build_roster, own_card};
use crate::work::engine::HostEffects;
use crate::work::mcp::Tools;
use crate::work::plugins::PluginHost;
use crate::work::skills::Catalog;

/// The agents as `serve` would find them: every card fetched and checked.
async fn discover(config: &Config) -> (Discovery, Roster) {
    let base_url = config.server.effective_base_url();
    let discovery = Registry::discover(
        own_card(&config.card, &base_url),
        &base_url,
        &config.agents,
        config.roster.card_timeout(),
    )
    .await;
    let roster = build_roster(&discovery.registry, config.roster.caps());
    (discovery, roster)
}

/// The plugins, and every tool beside theirs: the `[[mcp]]` servers are connected and their
/// tools listed, as `serve` would.
async fn plugins(
    config: &Config,
    roster: &Roster,
    skills: &Catalog,
) -> Result<(PluginHost, Arc<Tools>), StartError> {
    let context = prompt_context(config, roster, skills);
    // Nothing is served here: the tools are listed, never called with a task.
    let effects = Arc::new(HostEffects::offline());
    let host = PluginHost::load(&plugin_settings(config), &context, effects).await?;
    let tools = connect_tools(config, &host, &|name| std::env::var(name).ok()).await?;
    Ok((host, tools))
}

/// Each MCP server: how it is reached, whether it answered, and its tools as the model sees them.
fn write_mcp(out: &mut String, tools: &Tools) {
    for server in tools.mcp().summaries() {
        let state = match (&server.connected, &server.protocol) {
            (true, Some(protocol)) => format!("connected (MCP {protocol})"),
            (true, None) => "connected".to_string(),
            (false, _) => "NOT REACHED (optional: its tools answer [tool.unavailable])".to_string(),
        };
        let _ = writeln!(
            out,
            "mcp:           {} ({}): {state}, {} tools",
            server.name,
            escape(&server.transport),
            server.tools.len()
        );
        for tool in &server.tools {
            let _ = writeln!(out, "  tool:        {tool}");
        }
    }
}

/// `harness check`: the configuration, the model, the plugins, the skills, and which agents
/// would be registered and why any would not.
pub async fn check(config: &Config) -> Result<String, StartError> {
    check_with_env(config, |name| std::env::var(name).ok()).await
}

/// [`check`], every environment variable read with `env` (tests). The variables are read by
/// the function `serve` reads them with ([`FromEnvironment`]): a configuration check passes
/// is one serve takes, short of what only serving can tell (the address free, the store not
/// held by another process, the Temporal server up).
pub async fn check_with_env(
    config: &Config,
    env: impl Fn(&str) -> Option<String>,
) -> Result<String, StartError> {
    let FromEnvironment {
        models,
        credentials,
        ..
    } = FromEnvironment::read(config, &env)?;
    // `serve` refuses an `OTEL_EXPORTER_OTLP_ENDPOINT` that is no URL: so does `check`.
    config.telemetry.trace_export(&env)?;
    let model = models.default_model();
    let (discovery, roster) = discover(config).await;
    let skills = load_skills(config)?;
    let (host, tools) = plugins(config, &roster, &skills).await?;
    let source = config
        .source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "embedded default".to_string());
    let mut out = String::new();
    let _ = writeln!(out, "configuration: {source}");
    let _ = writeln!(out, "listen:        {}", config.server.bind);
    let _ = writeln!(out, "base URL:      {}", config.server.effective_base_url());
    let _ = writeln!(out, "model:         {}", model.describe());
    for (name, described) in models.describe_named() {
        let _ = writeln!(out, "models.{name}: {described}");
    }
    let _ = writeln!(
        out,
        "store:         {}",
        config.resolve(&config.store.path).display()
    );
    let _ = writeln!(
        out,
        "limits:        max_turns {}, turn budget {} tokens, compaction at {}",
        config.limits.max_turns,
        config.context.turn_budget_tokens,
        config.context.compaction_fraction
    );
    let budget = match config.limits.task_token_budget {
        Some(tokens) => format!("{tokens} tokens"),
        None => "off".to_string(),
    };
    let _ = writeln!(out, "task budget:   {budget}");
    let _ = writeln!(
        out,
        "sub-tasks:     max depth {}, at most {} per task and {} open at once, deadline {} s, agent unreachable after {} s",
        config.limits.max_subtask_depth,
        config.limits.max_children_per_task,
        config.limits.max_parallel_children,
        config.limits.subtask_deadline_secs,
        config.limits.subtask_unreachable_secs
    );
    let trusted: Vec<&str> = credentials.configured_ids().collect();
    let _ = writeln!(
        out,
        "delegators:    self{}",
        trusted
            .iter()
            .map(|id| format!(", {id}"))
            .collect::<String>()
    );
    let callers: Vec<&str> = credentials.caller_ids().collect();
    let _ = writeln!(
        out,
        "callers:       {}; anonymous callers {}",
        if callers.is_empty() {
            "none".to_string()
        } else {
            callers.join(", ")
        },
        if config.server.anonymous_allowed() {
            "served"
        } else {
            "refused"
        }
    );
    for plugin in host.summaries() {
        let _ = writeln!(
            out,
            "plugin:        {} ({} {}): {} section edits, {} tools",
            plugin.file,
            plugin.name,
            plugin.version,
            plugin.sections.len(),
            plugin.tools.len()
        );
    }
    write_mcp(&mut out, &tools);
    if skills.is_empty() {
        let _ = writeln!(out, "skills:        (none)");
    }
    for skill in skills.skills() {
        let _ = writeln!(
            out,
            "skill:         {} from {} ({} bytes): {}",
            skill.name,
            skill.file.display(),
            skill.body.len(),
            skill.description
        );
    }
    let _ = writeln!(
        out,
        "card:          {} (self: this harness)",
        roster.self_entry().name
    );
    if config.agents.is_empty() {
        let _ = writeln!(out, "agents:        (none)");
    }
    for agent in &config.agents {
        let entry = roster.entries().iter().find(|e| e.id == agent.id);
        let refusal = discovery.refused.iter().find(|r| r.id == agent.id);
        let verdict = match (entry, refusal) {
            (Some(entry), _) => format!(
                "registered as \"{}\" with {} skills",
                entry.name,
                entry.skills.len() + entry.omitted_skills
            ),
            (None, Some(refused)) => format!(
                "not registered: {}",
                crate::base::text::log_field::escape(&refused.reason.to_string())
            ),
            (None, None) => "not registered".to_string(),
        };
        let mut credentials = Vec::new();
        if let Some(name) = &agent.token_env {
            credentials.push(format!("bearer token from {name}"));
        }
        if let Some(name) = &agent.api_key_env {
            credentials.push(format!("API key from {name}"));
        }
        if let Some(oauth2) = &agent.oauth2 {
            credentials.push(format!(
                "OAuth2 client {} with the secret from {}",
                oauth2.client_id, oauth2.client_secret_env
            ));
        }
        let token = if credentials.is_empty() {
            String::new()
        } else {
            format!(" ({})", credentials.join(", "))
        };
        let _ = writeln!(
            out,
            "agent:         {} at {}{token}: {verdict}",
            agent.id, agent.url
        );
    }
    Ok(out)
}

/// What `harness check --probe` sends each model: the smallest request every provider accepts,
/// capped so the probe costs a handful of tokens.
const PROBE_INSTRUCTIONS: &str = "This is a connectivity check. Reply with the word OK.";
/// The probe's user message.
const PROBE_MESSAGE: &str = "ping";
/// The probe reply's cap in tokens: enough for a word, too little to cost anything.
const PROBE_MAX_OUTPUT_TOKENS: u32 = 16;

/// `harness check --probe`: one minimal call to the default model and to each `[models.NAME]`,
/// each with its provider's timeout and retries. Returns one line per model and whether every
/// call was answered.
pub async fn probe(config: &Config) -> Result<(String, bool), StartError> {
    probe_with_env(config, |name| std::env::var(name).ok()).await
}

/// [`probe`], the keys read with `env` (tests).
pub async fn probe_with_env(
    config: &Config,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(String, bool), StartError> {
    let FromEnvironment { models, .. } = FromEnvironment::read(config, &env)?;
    let request = crate::base::model::ModelRequest {
        instructions: PROBE_INSTRUCTIONS.into(),
        messages: vec![crate::base::model::ChatMessage::User {
            content: PROBE_MESSAGE.to_string(),
        }],
        max_output_tokens: Some(PROBE_MAX_OUTPUT_TOKENS),
        ..Default::default()
    };
    let mut targets = vec![("model".to_string(), models.default_model().clone())];
    for name in models.names() {
        if let Ok(model) = models.resolve(Some(&name)) {
            targets.push((format!("models.{name}"), model.clone()));
        }
    }
    let mut out = String::new();
    let mut all_answered = true;
    for (setting, model) in targets {
        let started = std::time::Instant::now();
        let result = model.complete(&request).await;
        let ms = started.elapsed().as_millis();
        let line = match result {
            Ok(reply) => format!(
                "probe {setting}: ok, answered in {ms} ms ({} input, {} output tokens)",
                reply.usage.input_tokens, reply.usage.output_tokens
            ),
            Err(err) => {
                all_answered = false;
                format!("probe {setting}: FAILED after {ms} ms: {err}")
            }
        };
        let _ = writeln!(out, "{line}");
    }
    Ok((out, all_answered))
}

/// `harness plugins`: each loaded plugin with the sections and tools it contributes.
pub async fn plugin_list(config: &Config) -> Result<String, StartError> {
    let (_, roster) = discover(config).await;
    let (host, tools) = plugins(config, &roster, &load_skills(config)?).await?;
    let mut out = String::new();
    for plugin in host.summaries() {
        let _ = writeln!(out, "{} — {} {}", plugin.file, plugin.name, plugin.version);
        let list = |items: &[String]| {
            if items.is_empty() {
                "(none)".to_string()
            } else {
                items.join(", ")
            }
        };
        let _ = writeln!(out, "  sections: {}", list(&plugin.sections));
        let _ = writeln!(out, "  tools:    {}", list(&plugin.tools));
        // Granted hosts, setting names and secrets by variable: never a value.
        match plugin.grants.as_slice() {
            [] => {
                let _ = writeln!(out, "  grants:   (none)");
            }
            [first, rest @ ..] => {
                let _ = writeln!(out, "  grants:   {first}");
                for line in rest {
                    let _ = writeln!(out, "            {line}");
                }
            }
        }
    }
    for server in tools.mcp().summaries() {
        let state = if server.connected {
            ""
        } else {
            " (not reached)"
        };
        let _ = writeln!(
            out,
            "mcp {} — {}{state}",
            server.name,
            escape(&server.transport)
        );
        let tools = if server.tools.is_empty() {
            "(none)".to_string()
        } else {
            server.tools.join(", ")
        };
        let _ = writeln!(out, "  tools:    {tools}");
    }
    Ok(out)
}

/// `harness context`: the static prefix exactly as the model receives it (the skills index
/// included), and the tools.
pub async fn context(config: &Config) -> Result<String, StartError> {
    let (_, roster) = discover(config).await;
    let skills = load_skills(config)?;
    let (host, tools) = plugins(config, &roster, &skills).await?;
    render_context(config, &host, &tools, &roster, &skills)
        .map_err(|err| StartError::Serve(std::io::Error::other(err.to_string())))
}
