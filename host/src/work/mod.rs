//! What works on a task: tools and their effect port, the context window, the remote agents
//! (registry, roster, the A2A client), skills, plugins, and the engine that runs every turn.
//!
//! Bottom to top, each importing only from those before it (and the folders below).

pub mod tools;

pub mod context;

pub mod agents;

pub mod skills;

pub mod plugins;

pub mod mcp;

pub mod engine;
