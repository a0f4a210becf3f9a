//! The one place the plugin contract becomes Rust: host traits to implement and typed calls
//! into guests, for the current version (`wit/plugin.wit`) and the older one still loaded
//! (`wit/v0.1.0`). Both share the current version's Rust types (the component model checks
//! them structurally when a plugin is linked), so the rest of the host knows one set of types;
//! the few records 0.1.0's `host` defines itself are converted in `host_api_v0_1`.
//! Every function is async so a guest can yield to the executor (epoch interruption) and a host
//! function can do I/O.

#![allow(
    missing_docs,
    reason = "generated: items carry the docs of wit/plugin.wit, where each record's comment says what its fields hold"
)]

wasmtime::component::bindgen!({
    world: "harness-plugin",
    path: "../wit",
    imports: { default: async },
    exports: { default: async },
});

/// Plugins built against 0.1.0: the same world without the functions added since.
pub mod v0_1 {
    wasmtime::component::bindgen!({
        world: "harness-plugin",
        path: "../wit/v0.1.0",
        imports: { default: async },
        exports: { default: async },
        with: {
            "tiny-harness:plugin/types": super::tiny_harness::plugin::types,
        },
    });
}

pub use self::tiny_harness::plugin::host;
pub use self::tiny_harness::plugin::types;
