//! tiny-harness: an agent harness that serves tasks over A2A 1.0 and runs a language model with
//! tools on each task.
//!
//! A request reaches [`server`], which checks limits, protocol version, extensions and the
//! caller's identity, then hands the message to [`tasks`], which owns every task's record, its
//! access rules and its event stream. The [`engine`] runs each open task's turn loop: it drains
//! new messages, asks [`context`] to assemble the window (a static prefix computed once at
//! start-up, per-task sections every turn), compacts when over budget, makes one call to the
//! [`model`], runs the tool calls, and journals every step in the [`store`] before it goes on, so
//! a restarted harness resumes each open task without repeating a recorded step.
//!
//! At start-up, [`agents`] fetches and checks the cards of the configured remote agents and
//! builds the roster the model sees in the static prefix's `agents` section, and [`skills`] reads
//! and checks the skills the model may load, listed in its `skills_index` section.

#![warn(missing_docs)]

// Layers, bottom to top: a module imports only from the layers below it, never from its own
// layer or above (host/tests/layers.rs holds the layers and checks them, with no file circle
// and no file over 450 lines before its tests). docs/architecture.md draws them.
pub mod http_body;
pub mod protocol;
pub mod text;

pub mod config;

pub mod model;

pub mod records;

pub mod store;

pub mod tasks;

pub mod tools;

pub mod context;

pub mod agents;

pub mod skills;

pub mod plugins;

pub mod engine;

pub mod server;

pub mod runtime;

pub mod operator;
