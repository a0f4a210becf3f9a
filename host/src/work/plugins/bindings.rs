//! The one place the plugin contract (`wit/plugin.wit`) becomes Rust: host traits to implement
//! and typed calls into guests. Every function is async so a guest can yield to the executor
//! (epoch interruption) and a host function can do I/O.

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

pub use self::tiny_harness::plugin::host;
pub use self::tiny_harness::plugin::types;
