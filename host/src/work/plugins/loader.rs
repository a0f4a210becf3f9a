//! Loading one plugin: compile (through the cache), link against the host functions and an
//! empty WASI, pre-instantiate, and ask it once for its info, sections and tools.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

use super::bindings::types::{PluginInfo, PromptContext, SectionEdit, ToolDefinition};
use super::bindings::{HarnessPlugin, v0_1};
use super::cache::{CacheOutcome, CompileCache};
use super::errors::{PluginError, describe_failure};
use super::grants::Grant;
use super::plugin_log::{CallLog, LogRate};
use super::sandbox::{CallLimits, StoreData, store};
use super::versions::PluginPre;
use crate::base::text::log_field::escape;

/// The first 8 bytes of a core WebAssembly module (magic, version 1), what a build for
/// `wasm32-unknown-unknown` or `wasm32-wasip1` writes; a component's header differs in its
/// version and layer bytes.
const CORE_MODULE_HEADER: &[u8; 8] = b"\0asm\x01\0\0\0";

/// Why a core module does not load, and how to build a component instead.
const CORE_MODULE_FIX: &str = "it is a core WebAssembly module, not a component: build it \
     as a component (Rust: `cargo build --target wasm32-wasip2 --release`; Python: componentize-py; \
     JavaScript: componentize-js; `harness plugin new` writes a project that does), or wrap a \
     wasip1 module with `wasm-tools component new MODULE.wasm --adapt \
     wasi_snapshot_preview1.reactor.wasm -o PLUGIN.wasm`";

/// A plugin ready to be called.
pub struct LoadedPlugin {
    /// The file name (`builtin` for the embedded one): how errors and logs name the plugin.
    pub file: String,
    pub info: PluginInfo,
    pub pre: PluginPre,
    pub sections: Vec<SectionEdit>,
    pub tools: Vec<ToolDefinition>,
    pub cache: CacheOutcome,
    /// How much it has logged lately, all its calls together.
    pub log_rate: Arc<LogRate>,
    /// What it may reach during a tool call (`[plugins.grants.<name>]`); `None`: nothing.
    pub grant: Option<Arc<Grant>>,
}

/// The linker every plugin is instantiated with: WASI p2 (nothing granted) and the host API.
pub fn linker(engine: &Engine) -> wasmtime::Result<Linker<StoreData>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    // Linked for every plugin so one built with an HTTP client loads; a plugin without an
    // `http` grant has every request refused (`outbound`).
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    HarnessPlugin::add_to_linker::<StoreData, HasSelf<StoreData>>(&mut linker, |data| data)?;
    // Plugins built against 0.1.0 import its `host` under its own name.
    v0_1::HarnessPlugin::add_to_linker::<StoreData, HasSelf<StoreData>>(&mut linker, |data| data)?;
    Ok(linker)
}

/// Compiles, links and interrogates one plugin.
pub async fn load(
    (engine, linker): &(Engine, Linker<StoreData>),
    cache: &CompileCache,
    file: &str,
    bytes: &[u8],
    limits: CallLimits,
    ctx: &PromptContext,
    grant: Option<Arc<Grant>>,
) -> Result<Arc<LoadedPlugin>, PluginError> {
    let started = Instant::now();
    let load_error = |reason: String| PluginError::Load {
        file: file.to_string(),
        reason,
    };
    if bytes.starts_with(CORE_MODULE_HEADER) {
        return Err(load_error(CORE_MODULE_FIX.to_string()));
    }
    let (component, outcome) = cache
        .compile(engine, bytes)
        .map_err(|err| load_error(format!("not a valid component: {err:#}")))?;
    let instance_pre = linker.instantiate_pre(&component).map_err(|err| {
        load_error(format!(
            "it needs imports this harness does not give (only WASI, wasi:http and tiny-harness:plugin/host): {err:#}"
        ))
    })?;
    let pre = PluginPre::new(instance_pre).map_err(load_error)?;

    let log_rate = Arc::new(LogRate::default());
    // The start-up calls read the plugin's settings but reach no network (`sandbox::store`).
    let mut store = store(
        engine,
        CallLog::new(file, log_rate.clone()),
        limits,
        None,
        grant.clone(),
    );
    let call = |function: &str, err: wasmtime::Error, store: &wasmtime::Store<StoreData>| {
        PluginError::Call {
            file: file.to_string(),
            function: function.to_string(),
            reason: describe_failure(&err, store.data(), limits),
        }
    };
    let instance = match pre.instantiate_async(&mut store).await {
        Ok(instance) => instance,
        Err(err) => return Err(call("instantiate", err, &store)),
    };
    let guest = &instance;
    let info = match guest.call_info(&mut store).await {
        Ok(info) => info,
        Err(err) => return Err(call("info", err, &store)),
    };
    let sections = match guest.call_sections(&mut store, ctx).await {
        Ok(sections) => sections,
        Err(err) => return Err(call("sections", err, &store)),
    };
    let tools = match guest.call_tools(&mut store, ctx).await {
        Ok(tools) => tools,
        Err(err) => return Err(call("tools", err, &store)),
    };
    tracing::info!(
        plugin = %escape(file),
        name = %escape(&info.name),
        version = %escape(&info.version),
        contract = pre.version(),
        sections = sections.len(),
        tools = tools.len(),
        cache = ?outcome,
        ms = started.elapsed().as_millis() as u64,
        "loaded plugin"
    );
    Ok(Arc::new(LoadedPlugin {
        file: file.to_string(),
        info,
        pre,
        sections,
        tools,
        cache: outcome,
        log_rate,
        grant,
    }))
}
