//! The A2A server: every binding, the connections and limits they are served under, and the
//! identity of callers, above the task service it serves (it imports [`crate::state::tasks`]; nothing
//! below imports it).
//!
//! [`router`] builds the HTTP routes; [`connections`] serves them under the connection limits
//! (with `activity`, each connection's clock, and [`fair_share`], each caller's share of the
//! connections), and [`rate_limit`] limits each caller's requests, both knowing callers by
//! [`caller_key`]. [`ops`] runs each operation against the [`crate::state::tasks::TaskService`], once
//! for every binding: [`dispatch`] is the JSON-RPC binding, [`v03`] its 0.3 dialect (0.3 method
//! names and shapes), [`rest`] the HTTP+JSON binding, [`grpc`] the gRPC binding (HTTP/2, on
//! `server.grpc_bind`). [`identity`] says who each request comes
//! from, once, before the limits; [`sse`] streams task events; [`headers`]
//! and [`validate`] check what a request carries before any work starts; [`extensions`] shapes
//! each answer by the extensions its request activated; [`task_errors`] turns the task
//! service's errors into A2A errors. [`oidc`] verifies OpenID Connect bearer JWTs
//! (`[server.oidc]`) and names the participant each proves. [`health`] answers `/healthz` and
//! `/readyz`, outside every per-caller limit. [`trace`] serves each A2A request within its
//! server span, joined to the caller's trace. The protocol's types, card and envelope are
//! [`crate::base::protocol`]; the client for other agents is [`crate::work::agents::client`].

pub(crate) mod activity;
pub mod caller_key;
pub mod connections;
pub mod dispatch;
pub mod extended_card;
pub mod extensions;
pub mod fair_share;
pub mod grpc;
pub mod headers;
pub mod health;
pub mod identity;
pub mod oidc;
pub mod ops;
#[cfg(test)]
mod properties;
pub mod push_ops;
pub mod rate_limit;
pub mod rest;
pub mod router;
pub mod sse;
pub mod task_errors;
pub mod trace;
pub mod v03;
pub mod validate;
