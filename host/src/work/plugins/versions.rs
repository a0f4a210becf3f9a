//! A plugin built against either version of the contract the host loads (0.2.0, the current
//! `wit/plugin.wit`, or 0.1.0 in `wit/v0.1.0`), behind one type: the host calls `info`,
//! `sections`, `tools` and `invoke` the same way whichever it is.

use wasmtime::component::InstancePre;
use wasmtime::{Engine, Store};

use super::bindings::types::{PluginInfo, PromptContext, SectionEdit, ToolDefinition, ToolError};
use super::bindings::{HarnessPlugin, HarnessPluginPre, v0_1};
use super::sandbox::StoreData;

/// The contract versions a plugin may be built against, newest first.
pub const CONTRACT_VERSIONS: [&str; 2] = ["0.2.0", "0.1.0"];

/// A plugin ready to be instantiated.
pub enum PluginPre {
    Current(HarnessPluginPre<StoreData>),
    V0_1(v0_1::HarnessPluginPre<StoreData>),
}

/// One instance of a plugin, for one call.
pub enum PluginInstance {
    Current(HarnessPlugin),
    V0_1(v0_1::HarnessPlugin),
}

impl PluginPre {
    /// Finds which version the component exports; `Err` says why it exports neither.
    pub fn new(pre: InstancePre<StoreData>) -> Result<PluginPre, String> {
        match HarnessPluginPre::new(pre.clone()) {
            Ok(current) => Ok(PluginPre::Current(current)),
            Err(current) => match v0_1::HarnessPluginPre::new(pre) {
                Ok(old) => Ok(PluginPre::V0_1(old)),
                Err(_) => Err(format!(
                    "it exports neither tiny-harness:plugin/plugin@{} nor @{}: {current:#}",
                    CONTRACT_VERSIONS[0], CONTRACT_VERSIONS[1]
                )),
            },
        }
    }

    /// The contract version it was built against.
    pub fn version(&self) -> &'static str {
        match self {
            PluginPre::Current(_) => CONTRACT_VERSIONS[0],
            PluginPre::V0_1(_) => CONTRACT_VERSIONS[1],
        }
    }

    /// The engine it was compiled for.
    pub fn engine(&self) -> &Engine {
        match self {
            PluginPre::Current(pre) => pre.engine(),
            PluginPre::V0_1(pre) => pre.engine(),
        }
    }

    /// A fresh instance in `store`.
    pub async fn instantiate_async(
        &self,
        store: &mut Store<StoreData>,
    ) -> wasmtime::Result<PluginInstance> {
        Ok(match self {
            PluginPre::Current(pre) => PluginInstance::Current(pre.instantiate_async(store).await?),
            PluginPre::V0_1(pre) => PluginInstance::V0_1(pre.instantiate_async(store).await?),
        })
    }
}

impl PluginInstance {
    pub async fn call_info(&self, store: &mut Store<StoreData>) -> wasmtime::Result<PluginInfo> {
        match self {
            PluginInstance::Current(i) => i.tiny_harness_plugin_plugin().call_info(store).await,
            PluginInstance::V0_1(i) => i.tiny_harness_plugin_plugin().call_info(store).await,
        }
    }

    pub async fn call_sections(
        &self,
        store: &mut Store<StoreData>,
        ctx: &PromptContext,
    ) -> wasmtime::Result<Vec<SectionEdit>> {
        match self {
            PluginInstance::Current(i) => {
                i.tiny_harness_plugin_plugin()
                    .call_sections(store, ctx)
                    .await
            }
            PluginInstance::V0_1(i) => {
                i.tiny_harness_plugin_plugin()
                    .call_sections(store, ctx)
                    .await
            }
        }
    }

    pub async fn call_tools(
        &self,
        store: &mut Store<StoreData>,
        ctx: &PromptContext,
    ) -> wasmtime::Result<Vec<ToolDefinition>> {
        match self {
            PluginInstance::Current(i) => {
                i.tiny_harness_plugin_plugin().call_tools(store, ctx).await
            }
            PluginInstance::V0_1(i) => i.tiny_harness_plugin_plugin().call_tools(store, ctx).await,
        }
    }

    pub async fn call_invoke(
        &self,
        store: &mut Store<StoreData>,
        name: &str,
        arguments: &str,
    ) -> wasmtime::Result<Result<String, ToolError>> {
        match self {
            PluginInstance::Current(i) => {
                i.tiny_harness_plugin_plugin()
                    .call_invoke(store, name, arguments)
                    .await
            }
            PluginInstance::V0_1(i) => {
                i.tiny_harness_plugin_plugin()
                    .call_invoke(store, name, arguments)
                    .await
            }
        }
    }
}
