//! The plugin host: system-prompt sections and tools come from WebAssembly components
//! (`wit/plugin.wit`). The builtin plugin is embedded in the binary and loads first; then every
//! `*.wasm` file in `[plugins] dir`, in file-name order, later plugins winning. Each call runs
//! in a fresh sandbox (no files, network or environment; a memory cap and a CPU deadline); a
//! call holds its caller's thread for one epoch tick at most and goes on on the plugin threads
//! if it runs longer, so a busy plugin never stalls the threads that serve HTTP; a plugin that
//! fails at a call becomes a `[plugin.failed]` result while the server goes on.

mod bindings;
mod cache;
mod call_state;
mod compose;
mod errors;
mod grants;
mod guest_call;
mod guest_output;
mod host_api;
mod host_api_v0_1;
mod loader;
mod outbound;
mod plugin_log;
mod sandbox;
mod threads;
mod toolbox;
mod versions;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use bindings::types::{
    AgentEntry, Participant as PluginParticipant, PromptContext, SkillEntry as PluginSkill,
    SkillSummary,
};
pub use cache::CacheOutcome;
pub use compose::{MAX_PROMPT_CHARS, MAX_SECTION_CHARS, Prompt, PromptError};
pub use errors::PluginError;
pub use grants::SECRET_MASK;
pub use outbound::MAX_RESPONSE_BYTES;
pub use plugin_log::{MAX_LOG_BYTES_PER_CALL, MAX_LOG_LINES_PER_CALL, MAX_LOG_LINES_PER_SECOND};
pub use sandbox::{COPY_INIT_MAX_BYTES, CallLimits};
pub use threads::THREAD_NAME_PREFIX;
pub use toolbox::{
    MAX_RESULT_CHARS, MAX_TOOL_DESCRIPTION_CHARS, Toolbox, argument_problems, check_tool,
    cut as cut_result,
};

use crate::base::config::PluginGrant;
use crate::base::text::log_field::escape_capped;
use crate::work::tools::EffectPort;
use cache::CompileCache;
use grants::Grant;
use loader::LoadedPlugin;
use threads::PluginThreads;

/// The builtin plugin, built for `wasm32-wasip2` by `build.rs` and embedded.
pub const BUILTIN_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/builtin.wasm"));
/// How the builtin is named in logs and errors.
pub const BUILTIN_NAME: &str = "builtin";
/// Plugin files a folder may hold before start-up refuses it, a guard against pointing
/// `plugins.dir` at the wrong folder.
pub const MAX_PLUGIN_FILES: usize = 256;
/// How much of a plugin's name, version or section name `harness plugins` shows: enough for any
/// honest one.
const MAX_SUMMARY_FIELD_CHARS: usize = 100;

/// Where plugins come from and how they run.
#[derive(Debug, Clone)]
pub struct PluginSettings {
    /// The plugins folder; `None` loads the builtin only.
    pub dir: Option<PathBuf>,
    /// Whether a missing folder is an error (it is when the operator named it).
    pub dir_required: bool,
    /// Where compiled components are cached; `None` compiles every start.
    pub cache_dir: Option<PathBuf>,
    /// The memory cap and deadline of each plugin call.
    pub limits: CallLimits,
    /// Threads tool calls run on (`plugins.threads`).
    pub threads: usize,
    /// Tool calls inside plugins at once (`plugins.max_concurrent_calls`).
    pub max_concurrent_calls: usize,
    /// What each plugin may reach, by file name without `.wasm` (`plugins.grants`).
    pub grants: BTreeMap<String, PluginGrant>,
    /// Where the grants' secrets are read from: the process environment, or a test's own.
    pub secrets_from: fn(&str) -> Option<String>,
}

/// Reads a secret from the process environment.
fn environment(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl Default for PluginSettings {
    fn default() -> Self {
        PluginSettings {
            dir: None,
            dir_required: false,
            cache_dir: None,
            limits: CallLimits {
                memory_bytes: 64 * 1024 * 1024,
                deadline: Duration::from_millis(1000),
            },
            threads: 2,
            max_concurrent_calls: 16,
            grants: BTreeMap::new(),
            secrets_from: environment,
        }
    }
}

/// A loaded plugin, as `harness plugins` lists it.
#[derive(Debug, Clone)]
pub struct PluginSummary {
    /// The component's file name (`builtin` for the embedded one).
    pub file: String,
    /// The name the plugin gives itself, escaped and capped for a terminal.
    pub name: String,
    /// The version the plugin gives itself, escaped and capped for a terminal.
    pub version: String,
    /// Each section edit as `kind name`.
    pub sections: Vec<String>,
    /// The names of the tools it defines.
    pub tools: Vec<String>,
    /// Whether its compiled component came from the cache.
    pub cache: CacheOutcome,
    /// What it was granted (`http …`, `config …`, `secret $ENV as header to host`), never a
    /// secret's or a setting's value.
    pub grants: Vec<String>,
}

/// Every loaded plugin, the composed prompt and the tools.
pub struct PluginHost {
    plugins: Vec<Arc<LoadedPlugin>>,
    prompt: Prompt,
    toolbox: Arc<Toolbox>,
}

impl PluginHost {
    /// Loads the builtin and the folder's plugins, composes the prompt and gathers the tools.
    /// Any failure stops start-up with an error naming the plugin file. The start-up calls
    /// (`info`, `sections`, `tools`) run here, before anything is served; tool calls run on the
    /// plugin threads started here.
    pub async fn load(
        settings: &PluginSettings,
        ctx: &PromptContext,
        port: Arc<dyn EffectPort>,
    ) -> Result<PluginHost, PluginError> {
        let engines = sandbox::Engines::start(sandbox::PoolSize {
            calls: settings.max_concurrent_calls,
            memory_bytes: settings.limits.memory_bytes,
        })
        .map_err(|err| PluginError::Engine(format!("{err:#}")))?;
        let linkers = engines
            .all()
            .map(|engine| loader::linker(engine).map(|linker| (engine.clone(), linker)));
        let [copying, mapping] = linkers;
        let (copying, mapping) = (
            copying.map_err(|err| PluginError::Engine(format!("{err:#}")))?,
            mapping.map_err(|err| PluginError::Engine(format!("{err:#}")))?,
        );
        let cache = CompileCache::new(settings.cache_dir.clone());
        let mut sources: Vec<(String, Vec<u8>)> =
            vec![(BUILTIN_NAME.to_string(), BUILTIN_WASM.to_vec())];
        if let Some(dir) = &settings.dir {
            sources.extend(read_folder(dir, settings.dir_required)?);
        }
        let mut grants = resolve_grants(settings, &sources)?;
        let mut plugins = Vec::with_capacity(sources.len());
        for (file, bytes) in &sources {
            let limits = settings.limits;
            let grant = grants.remove(file.as_str());
            let plugin = if !sandbox::copies_image(bytes.len()) {
                loader::load(&mapping, &cache, file, bytes, limits, ctx, grant).await?
            } else {
                let loaded =
                    loader::load(&copying, &cache, file, bytes, limits, ctx, grant.clone());
                match loaded.await {
                    Ok(plugin) => plugin,
                    // More instances, memories or tables than a pool slot holds (see
                    // `sandbox::POOL_CORE_INSTANCES_PER_COMPONENT`): it runs on the mapping
                    // engine, which has no such bound. Any other failure fails there too.
                    Err(PluginError::Call { function, .. }) if function == "instantiate" => {
                        let on_mapping =
                            loader::load(&mapping, &cache, file, bytes, limits, ctx, grant);
                        on_mapping.await?
                    }
                    Err(err) => return Err(err),
                }
            };
            plugins.push(plugin);
        }
        let mut prompt = Prompt::default();
        if let Some((builtin, others)) = plugins.split_first() {
            prompt.apply_builtin(&builtin.file, &builtin.sections)?;
            for plugin in others {
                prompt.apply(&plugin.file, &plugin.sections)?;
            }
        }
        let threads = PluginThreads::start(settings.threads, settings.max_concurrent_calls)
            .map_err(|err| PluginError::Engine(format!("its threads did not start: {err}")))?;
        let toolbox = Arc::new(Toolbox::new(settings.limits, threads, &plugins, port)?);
        Ok(PluginHost {
            plugins,
            prompt,
            toolbox,
        })
    }

    /// The composed system prompt.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    /// The tools, for the engine.
    pub fn toolbox(&self) -> Arc<Toolbox> {
        self.toolbox.clone()
    }

    /// What each plugin contributed, in load order. The plugin's own words (name, version,
    /// section names) are escaped and capped: they reach an operator's terminal.
    pub fn summaries(&self) -> Vec<PluginSummary> {
        let said = |text: &str| escape_capped(text, MAX_SUMMARY_FIELD_CHARS);
        self.plugins
            .iter()
            .map(|p| PluginSummary {
                file: p.file.clone(),
                name: said(&p.info.name),
                version: said(&p.info.version),
                sections: p
                    .sections
                    .iter()
                    .map(|s| format!("{} {}", edit_kind(s.kind), said(&s.name)))
                    .collect(),
                tools: p.tools.iter().map(|t| t.name.clone()).collect(),
                cache: p.cache,
                grants: p.grant.as_ref().map(|g| g.describe()).unwrap_or_default(),
            })
            .collect()
    }
}

/// Each granted plugin's grant, by file name, its secrets read from the environment. A grant
/// naming no plugin in the folder stops start-up: denied by default, a misspelt name would
/// otherwise leave the plugin without what its operator meant to give it, silently.
fn resolve_grants(
    settings: &PluginSettings,
    sources: &[(String, Vec<u8>)],
) -> Result<BTreeMap<String, Arc<Grant>>, PluginError> {
    let env = |name: &str| (settings.secrets_from)(name);
    let mut resolved = BTreeMap::new();
    for (name, grant) in &settings.grants {
        let file = sources
            .iter()
            .map(|(file, _)| file)
            .find(|file| file.strip_suffix(".wasm") == Some(name.as_str()))
            .ok_or_else(|| {
                let names: Vec<&str> = sources
                    .iter()
                    .filter_map(|(file, _)| file.strip_suffix(".wasm"))
                    .collect();
                PluginError::Grant {
                    setting: format!("plugins.grants.{name}"),
                    reason: format!(
                        "no plugin file {name}.wasm is loaded; plugins: {}",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    ),
                }
            })?;
        let grant = Grant::resolve(name, grant, &env).map_err(|err| PluginError::Grant {
            setting: err.setting,
            reason: err.reason,
        })?;
        resolved.insert(file.clone(), Arc::new(grant));
    }
    Ok(resolved)
}

fn edit_kind(kind: bindings::types::EditKind) -> &'static str {
    use bindings::types::EditKind;
    match kind {
        EditKind::Define => "define",
        EditKind::Override => "override",
        EditKind::Extend => "extend",
        EditKind::Replace => "replace",
    }
}

/// The folder's `*.wasm` files, sorted by file name.
fn read_folder(dir: &Path, required: bool) -> Result<Vec<(String, Vec<u8>)>, PluginError> {
    let dir_error = |reason: String| PluginError::Dir {
        path: dir.display().to_string(),
        reason,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && !required => {
            return Ok(Vec::new());
        }
        Err(err) => return Err(dir_error(err.to_string())),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|ext| ext == "wasm"))
        .collect();
    if files.len() > MAX_PLUGIN_FILES {
        return Err(dir_error(format!(
            "{} plugin files; at most {MAX_PLUGIN_FILES}",
            files.len()
        )));
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let bytes = std::fs::read(&path).map_err(|err| PluginError::Load {
                file: name.clone(),
                reason: err.to_string(),
            })?;
            Ok((name, bytes))
        })
        .collect()
}
