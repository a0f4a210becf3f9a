//! The union of every plugin's tools, as the engine calls them: names unique, arguments
//! validated against each tool's JSON Schema before the plugin runs, every call in a fresh
//! sandbox run by `threads` (past its first epoch tick, on the plugin threads), and a failure of any kind turned into a `[plugin.failed]`
//! result for the model.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::call_state::CallState;
use super::errors::PluginError;
use super::guest_call::{GuestCall, GuestResult};
use super::loader::LoadedPlugin;
use super::sandbox::CallLimits;
use super::threads::PluginThreads;
use crate::base::model::{ToolCall, ToolSpec};
use crate::base::text::log_field::escape;
use crate::work::tools::{Effect, EffectPort, ToolContext, ToolHost, ToolOutcome};

/// Tools one plugin may define.
pub const MAX_TOOLS_PER_PLUGIN: usize = 64;
/// A tool description longer than this is refused: it is sent on every turn.
pub const MAX_TOOL_DESCRIPTION_CHARS: usize = 4_000;
/// A tool's schema longer than this is refused, for the same reason.
pub const MAX_SCHEMA_CHARS: usize = 16_000;
/// A result longer than this is cut (and marked) before the model reads it.
pub const MAX_RESULT_CHARS: usize = 32_000;

struct Entry {
    plugin: Arc<LoadedPlugin>,
    validator: jsonschema::Validator,
}

/// Every plugin's tools.
pub struct Toolbox {
    /// Every effect a tool asks for goes through it: the engine checks and makes it.
    port: Arc<dyn EffectPort>,
    limits: CallLimits,
    /// Where every `invoke` runs, away from the threads that serve HTTP and drive tasks.
    threads: PluginThreads,
    entries: HashMap<String, Entry>,
    specs: Vec<ToolSpec>,
}

impl Toolbox {
    /// Gathers the plugins' tools, checking names, sizes and schemas.
    pub fn new(
        limits: CallLimits,
        threads: PluginThreads,
        plugins: &[Arc<LoadedPlugin>],
        port: Arc<dyn EffectPort>,
    ) -> Result<Toolbox, PluginError> {
        let mut entries: HashMap<String, Entry> = HashMap::new();
        let mut specs = Vec::new();
        for plugin in plugins {
            let refuse = |reason: String| PluginError::Contribution {
                file: plugin.file.clone(),
                reason,
            };
            if plugin.tools.len() > MAX_TOOLS_PER_PLUGIN {
                return Err(refuse(format!(
                    "defines {} tools; at most {MAX_TOOLS_PER_PLUGIN}",
                    plugin.tools.len()
                )));
            }
            for tool in &plugin.tools {
                let (schema, validator) =
                    check_tool(&tool.name, &tool.description, &tool.parameters).map_err(&refuse)?;
                if let Some(existing) = entries.get(&tool.name) {
                    return Err(PluginError::ToolClash {
                        tool: tool.name.clone(),
                        first: existing.plugin.file.clone(),
                        second: plugin.file.clone(),
                    });
                }
                specs.push(ToolSpec {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: schema,
                });
                entries.insert(
                    tool.name.clone(),
                    Entry {
                        plugin: plugin.clone(),
                        validator,
                    },
                );
            }
        }
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Toolbox {
            port,
            limits,
            threads,
            entries,
            specs,
        })
    }

    /// The plugin file that provides a tool.
    pub fn provider(&self, tool: &str) -> Option<&str> {
        self.entries.get(tool).map(|e| e.plugin.file.as_str())
    }
}

/// Checks one tool definition as the model will see it: its name (`[A-Za-z0-9_-]`, at most 64),
/// the size of its description and schema, and that the schema is a JSON Schema of an object.
/// The schema and its validator, or why the tool is refused. Every source of tools (plugins, MCP
/// servers) goes through this one check.
pub fn check_tool(
    name: &str,
    description: &str,
    parameters: &str,
) -> Result<(Value, jsonschema::Validator), String> {
    check_name(name)?;
    if description.chars().count() > MAX_TOOL_DESCRIPTION_CHARS {
        return Err(format!(
            "tool {name}: description longer than {MAX_TOOL_DESCRIPTION_CHARS} characters"
        ));
    }
    if parameters.chars().count() > MAX_SCHEMA_CHARS {
        return Err(format!(
            "tool {name}: parameters schema longer than {MAX_SCHEMA_CHARS} characters"
        ));
    }
    let schema: Value = serde_json::from_str(parameters)
        .map_err(|err| format!("tool {name}: parameters is not JSON: {err}"))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(format!(
            "tool {name}: parameters must be a JSON Schema with \"type\": \"object\""
        ));
    }
    let validator = jsonschema::validator_for(&schema)
        .map_err(|err| format!("tool {name}: invalid JSON Schema: {err}"))?;
    Ok((schema, validator))
}

/// The first few ways `arguments` break a tool's schema, each with where: what the model reads
/// in `[tool.invalid_arguments]`. Empty when they fit.
pub fn argument_problems(validator: &jsonschema::Validator, arguments: &Value) -> Vec<String> {
    validator
        .iter_errors(arguments)
        .take(3)
        .map(|err| {
            let at = err.instance_path.to_string();
            if at.is_empty() {
                err.to_string()
            } else {
                format!("{at}: {err}")
            }
        })
        .collect()
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "\"{name}\" is not a tool name (letters, digits, _ and -, at most 64)"
        ))
    }
}

/// A tool's result capped at [`MAX_RESULT_CHARS`] (and marked where cut): every source of
/// tools caps its results here before the context fences them as untrusted.
pub fn cut(text: String) -> String {
    match crate::base::text::cut::cut(&text, MAX_RESULT_CHARS) {
        Cow::Borrowed(_) => text,
        Cow::Owned(cut) => cut,
    }
}

#[async_trait]
impl ToolHost for Toolbox {
    fn definitions(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    async fn invoke(&self, context: &ToolContext<'_>, call: &ToolCall) -> ToolOutcome {
        self.run(context, call, false).await.outcome
    }

    async fn invoke_in_process(
        &self,
        context: &ToolContext<'_>,
        call: &ToolCall,
    ) -> Option<ToolOutcome> {
        let ran = self.run(context, call, true).await;
        (!ran.asked_outside).then_some(ran.outcome)
    }
}

/// What came of one run of a call.
struct Ran {
    outcome: ToolOutcome,
    /// Whether the call, run in the process only, asked to create a child: its outcome is then
    /// not the call's.
    asked_outside: bool,
}

impl From<ToolOutcome> for Ran {
    fn from(outcome: ToolOutcome) -> Ran {
        Ran {
            outcome,
            asked_outside: false,
        }
    }
}

impl Toolbox {
    /// Validates the call's arguments and runs it in a fresh sandbox; `in_process_only` refuses
    /// it every request to create a child ([`CallState::in_process_only`]).
    async fn run(&self, context: &ToolContext<'_>, call: &ToolCall, in_process_only: bool) -> Ran {
        let Some(entry) = self.entries.get(&call.name) else {
            let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
            return ToolOutcome::error(
                "tool.not_found",
                format!(
                    "no tool named \"{}\"; tools: {}",
                    call.name,
                    names.join(", ")
                ),
            )
            .into();
        };
        let arguments: Value = match serde_json::from_str(&call.arguments) {
            Ok(value) => value,
            Err(err) => {
                return ToolOutcome::error(
                    "tool.invalid_arguments",
                    format!("{}: arguments are not JSON: {err}", call.name),
                )
                .into();
            }
        };
        let problems = argument_problems(&entry.validator, &arguments);
        if !problems.is_empty() {
            return ToolOutcome::error(
                "tool.invalid_arguments",
                format!("{}: {}", call.name, problems.join("; ")),
            )
            .into();
        }
        let plugin = &entry.plugin;
        let state = CallState {
            record: context.record.clone(),
            call_id: context.call_id.to_string(),
            effects: Vec::new(),
            port: self.port.clone(),
            host: tokio::runtime::Handle::try_current().ok(),
            spawned: 0,
            requested_model: arguments
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string),
            loaded_skills: context.skills.to_vec(),
            in_process_only,
            asked_outside: false,
        };
        let guest = GuestCall {
            plugin: plugin.clone(),
            limits: self.limits,
            tool: call.name.clone(),
            arguments: arguments.to_string(),
            state,
        };
        let failed = |reason: String, effects: Vec<Effect>| {
            tracing::warn!(plugin = %escape(&plugin.file), tool = %call.name, "plugin call failed: {}", escape(&reason));
            ToolOutcome {
                effects: kept(effects),
                ..ToolOutcome::error(
                    "plugin.failed",
                    format!("plugin {} failed in {}: {reason}", plugin.file, call.name),
                )
            }
        };
        let report = match self.threads.run(guest.run()).await {
            Ok(report) => report,
            Err(err) => return failed(err.to_string(), Vec::new()).into(),
        };
        if report.asked_outside {
            // Refused a child, it did nothing: what it made of the refusal is not its outcome.
            return Ran {
                outcome: ToolOutcome::error("host.not_yet", "run again once recorded"),
                asked_outside: true,
            };
        }
        let outcome = match report.result {
            GuestResult::Failed(reason) => failed(reason, report.effects),
            GuestResult::Returned(Err(tool_error)) => ToolOutcome {
                effects: kept(report.effects),
                ..ToolOutcome::error(&tool_error.code, tool_error.message)
            },
            GuestResult::Returned(Ok(text)) => ToolOutcome {
                result: Ok(cut(text)),
                effects: report.effects,
            },
        };
        outcome.into()
    }
}

/// The effects of a call that failed which happened anyway: a child created during the call
/// exists on its agent whatever the call did next, so its row is kept and the child followed.
fn kept(mut effects: Vec<Effect>) -> Vec<Effect> {
    effects.retain(Effect::already_happened);
    effects
}
