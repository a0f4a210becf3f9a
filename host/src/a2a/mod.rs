//! The A2A 1.0 protocol: its types, the JSON-RPC server, and a client for other agents.
//!
//! [`server`] builds the HTTP routes and serves them; [`dispatch`] runs each JSON-RPC method
//! against the [`crate::tasks::TaskService`]; [`sse`] streams task events; [`headers`] and
//! [`validate`] check what a request carries before any work starts; [`jsonrpc`] is the envelope
//! and its errors; [`card`] is the agent card; [`client`] talks to other A2A agents.

pub mod card;
pub mod client;
pub mod dispatch;
pub mod headers;
pub mod jsonrpc;
pub mod server;
pub mod sse;
pub mod types;
pub mod validate;
