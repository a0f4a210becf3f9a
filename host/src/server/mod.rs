//! The A2A 1.0 protocol: its types, the server's bindings, and a client for other agents.
//!
//! [`server`] builds the HTTP routes; [`connections`] serves them under the connection limits
//! (with [`activity`], each connection's clock, and [`fair_share`], each caller's share of the
//! connections), and [`rate_limit`] limits each caller's requests, both knowing callers by
//! [`caller_key`]. [`ops`] runs each operation against the
//! [`crate::tasks::TaskService`], once for every binding: [`dispatch`] is the JSON-RPC binding,
//! [`v03`] its 0.3 dialect (0.3 method names and shapes), [`rest`] the HTTP+JSON binding.
//! [`sse`] streams task events; [`headers`] and [`validate`] check what a request carries before
//! any work starts; [`extensions`] shapes each answer by the extensions its request activated;
//! [`jsonrpc`] is the envelope and its errors; [`card`] is the agent card; [`client`] talks to
//! other A2A agents, in 1.0 or 0.3.

pub(crate) mod activity;
pub mod caller_key;
pub mod connections;
pub mod dispatch;
pub mod extensions;
pub mod fair_share;
pub mod headers;
pub mod ops;
#[cfg(test)]
mod properties;
pub mod rate_limit;
pub mod rest;
pub mod router;
pub mod sse;
pub mod task_errors;
pub mod v03;
pub mod validate;
