//! The A2A 1.0 protocol: its types, the JSON-RPC server, and a client for other agents.

pub mod types;
