//! MCP tool servers (`[[mcp]]`): the harness connects to each at start-up (a program spoken to
//! over its stdio, or a streamable-HTTP endpoint), lists its tools and offers them to the model
//! as `mcp__<server>__<tool>`, checked by the same check as plugin tools. A call runs on the
//! server with its deadline (past it: cancelled, `[tool.timeout]`); its result is capped like
//! every tool result and fenced as untrusted by the context. A server that exits is reconnected
//! with backoff; meanwhile its tools answer `[tool.unavailable]`. An optional server that could
//! not be reached at start-up is tried again with backoff and its tools join once it answers
//! (`late`). [`Tools`] puts these tools beside the plugins' behind the one tool port, so the
//! engine journals their calls like any.

mod connect;
mod late;
mod result;
mod server;
mod tools;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};

use rmcp::model::JsonObject;
use serde_json::Value;

pub use connect::{CONNECT_TIMEOUT, MAX_STDERR_LINE_CHARS, MAX_STDERR_LINES_PER_MINUTE};
pub use late::{LATE_RETRY_FIRST, LATE_RETRY_MAX};
pub use result::{CODE_FAILED, CODE_TIMEOUT, CODE_TOOL_ERROR, CODE_UNAVAILABLE};
pub use server::{RESTART_BACKOFF_FIRST, RESTART_BACKOFF_MAX, RESTART_BACKOFF_RESET};
pub use tools::Tools;

use crate::base::config::McpServerConfig;
use crate::base::model::ToolSpec;
use crate::base::text::log_field::escape;
use crate::base::text::untrusted::neutralise;
use crate::work::plugins::{MAX_TOOL_DESCRIPTION_CHARS, argument_problems, check_tool};
use crate::work::tools::ToolOutcome;
use connect::{Client, ConnectContext};
use late::Late;
use server::Server;

/// The prefix of every MCP tool's name; then the server's name, `__`, and the tool's.
pub const TOOL_PREFIX: &str = "mcp__";
/// Tools one server may offer: each is sent to the model on every turn.
pub const MAX_TOOLS_PER_SERVER: usize = 64;
/// The longest tool name the model APIs take.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// Why the MCP servers could not be used; start-up stops with it (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// A required server could not be reached, or what it offers cannot be used.
    #[error("mcp[{index}] ({name}): {reason}")]
    Server {
        /// Its index in `[[mcp]]`.
        index: usize,
        /// Its name.
        name: String,
        /// What went wrong and what to do.
        reason: String,
    },
}

/// One server as `harness check` and `harness plugins` show it.
#[derive(Debug, Clone)]
pub struct McpSummary {
    /// Its name.
    pub name: String,
    /// `command` or the URL.
    pub transport: String,
    /// Whether it is connected now.
    pub connected: bool,
    /// The protocol revision agreed, when connected.
    pub protocol: Option<String>,
    /// Its tools as the model sees them.
    pub tools: Vec<String>,
}

struct Entry {
    server: Arc<Server>,
    /// The server's own name for the tool.
    tool: String,
    validator: jsonschema::Validator,
}

/// The tools offered so far and each server's summary: replaced whole when a server that was
/// down at start-up joins, so a reader sees it before the join or after it.
#[derive(Default, Clone)]
struct Catalog {
    entries: HashMap<String, Arc<Entry>>,
    specs: Vec<ToolSpec>,
    summaries: Vec<McpSummary>,
}

/// Every `[[mcp]]` server and its tools.
#[derive(Default)]
pub struct McpTools {
    catalog: RwLock<Catalog>,
    /// Servers by name, for calls to a tool of a server that is down or was never reached.
    servers: BTreeMap<String, Arc<Server>>,
    supervisors: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Optional servers not reached at start-up, until [`Tools::start_late`] takes them.
    late: Mutex<Vec<Late>>,
}

impl Drop for McpTools {
    /// Stops reconnecting; dropping each session stops its program.
    fn drop(&mut self) {
        let supervisors = self
            .supervisors
            .get_mut()
            .unwrap_or_else(|p| p.into_inner());
        for supervisor in supervisors.iter() {
            supervisor.abort();
        }
    }
}

/// Locks `mutex`, a poisoned one included (what it guards stays consistent: whole values).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl McpTools {
    /// Connects to every server and lists its tools. A required server that cannot be reached,
    /// a tool name that cannot be made, or a schema the plugin check refuses stops start-up
    /// naming the entry; an optional server that cannot be reached is logged and its tools
    /// answer `[tool.unavailable]` until it is reached ([`Tools::start_late`] tries it again).
    /// `resolve` resolves `cwd` against the configuration file;
    /// `env` reads the variables `headers_env` names.
    pub async fn connect(
        configs: &[McpServerConfig],
        resolve: impl Fn(&std::path::Path) -> PathBuf,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<McpTools, McpError> {
        let mut tools = McpTools::default();
        for (index, config) in configs.iter().enumerate() {
            let refuse = |reason: String| McpError::Server {
                index,
                name: config.name.clone(),
                reason,
            };
            let mut headers = HashMap::new();
            for (header, variable) in &config.headers_env {
                match env(variable) {
                    Some(value) => headers.insert(header.clone(), value),
                    None => {
                        return Err(refuse(format!(
                            "headers_env.{header}: the environment variable {variable} is not set"
                        )));
                    }
                };
            }
            let context = ConnectContext {
                cwd: config.cwd.as_deref().map(&resolve),
                headers,
            };
            let server = Arc::new(Server::new(index, config));
            tools.servers.insert(config.name.clone(), server.clone());
            let transport = match (&config.command, &config.url) {
                (Some(command), _) => command.join(" "),
                (None, url) => url.clone().unwrap_or_default(),
            };
            let summary = McpSummary {
                name: config.name.clone(),
                transport,
                connected: false,
                protocol: None,
                tools: Vec::new(),
            };
            let client = match connect::connect(index, config, &context).await {
                Ok(client) => client,
                Err(reason) if config.optional => {
                    tracing::warn!(mcp = %config.name, entry = index, "optional MCP server not reached; its tools answer [tool.unavailable] until it is: {}", escape(&reason));
                    tools.catalog_mut().summaries.push(summary);
                    lock(&tools.late).push(Late {
                        index,
                        config: config.clone(),
                        context,
                        server,
                    });
                    continue;
                }
                Err(reason) => {
                    return Err(refuse(format!(
                        "{reason} (check the entry, or set `optional = true` to start without it)"
                    )));
                }
            };
            let listed = list_tools(&client).await.map_err(&refuse)?;
            tools
                .catalog_mut()
                .admit(&server, config, summary, &client, listed)
                .map_err(&refuse)?;
            tools.supervise(server, config.clone(), context, client);
        }
        Ok(tools)
    }

    fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|p| p.into_inner())
    }

    fn catalog_mut(&mut self) -> &mut Catalog {
        self.catalog.get_mut().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks `server` live on `client` and reconnects it whenever its session ends.
    fn supervise(
        &self,
        server: Arc<Server>,
        config: McpServerConfig,
        context: ConnectContext,
        client: Client,
    ) {
        server.attach(&client);
        let supervisor = tokio::spawn(server::supervise(server, config, context, client));
        lock(&self.supervisors).push(supervisor);
    }

    /// Every MCP tool's definition, sorted by name.
    pub fn definitions(&self) -> Vec<ToolSpec> {
        self.catalog().specs.clone()
    }

    /// Each server, in `[[mcp]]` order.
    pub fn summaries(&self) -> Vec<McpSummary> {
        self.catalog().summaries.clone()
    }

    /// Whether the server named `name` has a live session now (false while it restarts).
    pub fn connected(&self, name: &str) -> bool {
        self.servers.get(name).is_some_and(|server| server.is_up())
    }

    /// The entry (index and name) of the server offering tool `name`.
    pub fn entry_of(&self, name: &str) -> Option<(usize, String)> {
        let catalog = self.catalog();
        let server = &catalog.entries.get(name)?.server;
        Some((server.index, server.name.clone()))
    }

    /// Whether `name` is an MCP tool, or names a server's namespace (whose tools may be down).
    pub fn claims(&self, name: &str) -> bool {
        self.catalog().entries.contains_key(name) || self.server_of(name).is_some()
    }

    fn server_of(&self, name: &str) -> Option<&Arc<Server>> {
        let rest = name.strip_prefix(TOOL_PREFIX)?;
        self.servers
            .iter()
            .find(|(server, _)| {
                rest.strip_prefix(server.as_str())
                    .is_some_and(|tail| tail.starts_with("__"))
            })
            .map(|(_, server)| server)
    }

    /// Runs one call: arguments checked against the tool's schema, then the server's answer.
    pub async fn invoke(&self, name: &str, arguments: &str) -> ToolOutcome {
        let Some(entry) = self.catalog().entries.get(name).cloned() else {
            return match self.server_of(name) {
                Some(server) if !server.is_up() => result::unavailable(name, &server.name),
                _ => ToolOutcome::error("tool.not_found", format!("no tool named \"{name}\"")),
            };
        };
        let arguments: JsonObject = match serde_json::from_str::<Value>(arguments) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return ToolOutcome::error(
                    "tool.invalid_arguments",
                    format!("{name}: arguments must be a JSON object"),
                );
            }
            Err(err) => {
                return ToolOutcome::error(
                    "tool.invalid_arguments",
                    format!("{name}: arguments are not JSON: {err}"),
                );
            }
        };
        let problems = argument_problems(&entry.validator, &Value::Object(arguments.clone()));
        if !problems.is_empty() {
            return ToolOutcome::error(
                "tool.invalid_arguments",
                format!("{name}: {}", problems.join("; ")),
            );
        }
        let answer = entry.server.call(&entry.tool, arguments).await;
        if let Err(failure) = &answer {
            tracing::warn!(mcp = %entry.server.name, tool = %name, "MCP call failed: {}", escape(&format!("{failure:?}")));
        }
        result::outcome(name, &entry.server.name, answer)
    }
}

/// Every tool `client`'s server offers.
async fn list_tools(client: &Client) -> Result<Vec<rmcp::model::Tool>, String> {
    client
        .peer()
        .list_all_tools()
        .await
        .map_err(|err| format!("listing its tools failed: {err}"))
}

impl Catalog {
    /// Adds the tools of `server`, connected on `client`, that its entry allows, and its
    /// summary (in the place of the one it had while it was down, if any).
    fn admit(
        &mut self,
        server: &Arc<Server>,
        config: &McpServerConfig,
        mut summary: McpSummary,
        client: &Client,
        listed: Vec<rmcp::model::Tool>,
    ) -> Result<(), String> {
        summary.tools = self.add_tools(server, config, listed)?;
        summary.connected = true;
        summary.protocol = client
            .peer()
            .peer_info()
            .map(|info| info.protocol_version.to_string());
        tracing::info!(mcp = %config.name, entry = server.index, tools = summary.tools.len(), protocol = summary.protocol.as_deref().unwrap_or("?"), "MCP server connected");
        match self.summaries.iter_mut().find(|s| s.name == summary.name) {
            Some(was) => *was = summary,
            None => self.summaries.push(summary),
        }
        self.specs.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(())
    }

    /// Checks and adds the server's tools that the entry allows; their names as the model sees
    /// them.
    fn add_tools(
        &mut self,
        server: &Arc<Server>,
        config: &McpServerConfig,
        listed: Vec<rmcp::model::Tool>,
    ) -> Result<Vec<String>, String> {
        if let Some(allowed) = &config.tools {
            for (i, name) in allowed.iter().enumerate() {
                if !listed.iter().any(|tool| tool.name == name.as_str()) {
                    return Err(format!(
                        "tools[{i}]: the server has no tool `{}`",
                        escape(name)
                    ));
                }
            }
        }
        let kept: Vec<_> = listed
            .into_iter()
            .filter(|tool| {
                config
                    .tools
                    .as_ref()
                    .is_none_or(|allowed| allowed.iter().any(|a| a.as_str() == tool.name))
            })
            .collect();
        if kept.len() > MAX_TOOLS_PER_SERVER {
            return Err(format!(
                "offers {} tools; at most {MAX_TOOLS_PER_SERVER}: list the ones to keep in `tools`",
                kept.len()
            ));
        }
        let mut names = Vec::with_capacity(kept.len());
        for tool in kept {
            let name = format!("{TOOL_PREFIX}{}__{}", config.name, tool.name);
            if name.chars().count() > MAX_TOOL_NAME_CHARS {
                return Err(format!(
                    "tool `{}`: `{}` is longer than {MAX_TOOL_NAME_CHARS} characters; leave it out with `tools` or shorten `name`",
                    escape(&tool.name),
                    escape(&name)
                ));
            }
            let description = crate::base::text::cut::cut(
                &neutralise(tool.description.as_deref().unwrap_or("")),
                MAX_TOOL_DESCRIPTION_CHARS - 1,
            )
            .into_owned();
            let parameters = Value::Object((*tool.input_schema).clone()).to_string();
            let (schema, validator) =
                check_tool(&name, &description, &parameters).map_err(|reason| escape(&reason))?;
            if self.entries.contains_key(&name) {
                // Possible across servers: `a` with `b__c` and `a__b` with `c`.
                return Err(format!("tool `{name}` is offered twice"));
            }
            self.specs.push(ToolSpec {
                name: name.clone(),
                description,
                parameters: schema,
            });
            self.entries.insert(
                name.clone(),
                Arc::new(Entry {
                    server: server.clone(),
                    tool: tool.name.to_string(),
                    validator,
                }),
            );
            names.push(name);
        }
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::base::config::Config;

    fn entry(extra: &str) -> McpServerConfig {
        let text = format!("[[mcp]]\nname = \"files\"\ncommand = [\"x\"]\n{extra}\n");
        Config::parse(&text, Path::new("config.toml"))
            .unwrap()
            .mcp
            .remove(0)
    }

    fn tool(name: &str, description: &str, schema: Value) -> rmcp::model::Tool {
        serde_json::from_value(serde_json::json!({
            "name": name, "description": description, "inputSchema": schema
        }))
        .unwrap()
    }

    fn offered(
        config: &McpServerConfig,
        listed: Vec<rmcp::model::Tool>,
    ) -> Result<McpTools, String> {
        let mut tools = McpTools::default();
        let server = Arc::new(Server::new(0, config));
        tools.catalog_mut().add_tools(&server, config, listed)?;
        Ok(tools)
    }

    fn object() -> Value {
        serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }

    #[test]
    fn tools_are_namespaced_by_their_server_and_cleaned() {
        let tools = offered(
            &entry(""),
            vec![tool("read", "Reads </untrusted> a\u{200b} file", object())],
        )
        .unwrap();
        let spec = &tools.definitions()[0];
        assert_eq!(spec.name, "mcp__files__read");
        assert_eq!(spec.description, "Reads ‹/untrusted› a file");
        assert!(tools.claims("mcp__files__read"));
        assert!(!tools.claims("mcp__other__read"));
    }

    #[test]
    fn a_name_that_cannot_fit_or_be_a_tool_name_is_refused() {
        let long = "a".repeat(60);
        let err = offered(&entry(""), vec![tool(&long, "", object())])
            .err()
            .unwrap();
        assert!(
            err.contains(
                "is longer than 64 characters; leave it out with `tools` or shorten `name`"
            ),
            "{err}"
        );
        let err = offered(&entry(""), vec![tool("read file", "", object())])
            .err()
            .unwrap();
        assert!(err.contains("is not a tool name"), "{err}");
    }

    #[test]
    fn two_servers_whose_names_make_one_tool_name_are_refused() {
        let first = {
            let text = "[[mcp]]\nname = \"a\"\ncommand = [\"x\"]\n";
            Config::parse(text, Path::new("config.toml"))
                .unwrap()
                .mcp
                .remove(0)
        };
        let second = {
            let text = "[[mcp]]\nname = \"a__b\"\ncommand = [\"x\"]\n";
            Config::parse(text, Path::new("config.toml"))
                .unwrap()
                .mcp
                .remove(0)
        };
        let mut tools = McpTools::default();
        let server = Arc::new(Server::new(0, &first));
        tools
            .catalog_mut()
            .add_tools(&server, &first, vec![tool("b__c", "", object())])
            .unwrap();
        let server = Arc::new(Server::new(1, &second));
        let err = tools
            .catalog_mut()
            .add_tools(&server, &second, vec![tool("c", "", object())])
            .unwrap_err();
        assert_eq!(err, "tool `mcp__a__b__c` is offered twice");
    }

    #[test]
    fn a_schema_the_plugin_check_refuses_is_refused() {
        let err = offered(
            &entry(""),
            vec![tool("read", "", serde_json::json!({"type": "string"}))],
        )
        .err()
        .unwrap();
        assert!(
            err.contains("must be a JSON Schema with \"type\": \"object\""),
            "{err}"
        );
    }

    #[test]
    fn the_allowlist_keeps_its_tools_and_names_one_the_server_lacks() {
        let listed = || vec![tool("read", "", object()), tool("write", "", object())];
        let tools = offered(&entry("tools = [\"read\"]"), listed()).unwrap();
        let definitions = tools.definitions();
        let names: Vec<&str> = definitions.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mcp__files__read"]);
        let err = offered(&entry("tools = [\"read\", \"delete\"]"), listed())
            .err()
            .unwrap();
        assert_eq!(err, "tools[1]: the server has no tool `delete`");
    }

    #[tokio::test]
    async fn a_call_in_the_namespace_of_a_server_that_is_down_is_unavailable() {
        let config = entry("");
        let tools = offered(&config, vec![tool("read", "", object())]).unwrap();
        let mut tools = tools;
        let server = tools.catalog().entries["mcp__files__read"].server.clone();
        tools.servers.insert("files".into(), server);
        let outcome = tools.invoke("mcp__files__read", "{\"path\": \"a\"}").await;
        assert_eq!(
            outcome.text(),
            "[tool.unavailable] mcp__files__read: the MCP server files is not running just now; try again later or go on without it"
        );
        let outcome = tools.invoke("mcp__files__read", "{\"path\": 3}").await;
        assert!(
            outcome
                .text()
                .starts_with("[tool.invalid_arguments] mcp__files__read: "),
            "{}",
            outcome.text()
        );
    }
}
