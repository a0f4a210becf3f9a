//! tiny-harness: an agent harness that serves tasks over A2A 1.0 and runs a language model with
//! tools on each task.
//!
//! A request reaches [`app::server`], which checks limits, protocol version, extensions and the
//! caller's identity, then hands the message to [`state::tasks`], which owns every task's record, its
//! access rules and its event stream. The [`work::engine`] runs each open task's turn loop: it drains
//! new messages, asks [`work::context`] to assemble the window (a static prefix computed once at
//! start-up, per-task sections every turn), compacts when over budget, makes one call to the
//! [`base::model`], runs the tool calls, and journals every step in the [`state::store`] before it goes on, so
//! a restarted harness resumes each open task without repeating a recorded step.
//!
//! At start-up, [`work::agents`] fetches and checks the cards of the configured remote agents and
//! builds the roster the model sees in the static prefix's `agents` section, and [`work::skills`] reads
//! and checks the skills the model may load, listed in its `skills_index` section.

#![warn(missing_docs)]

// Layers, bottom to top, one folder each: a module imports only from the modules below it (in its
// folder's order, then the folders below), never from its own level or above. host/tests/layers.rs
// holds the order and checks it, with no file circle and no file over 450 lines before its
// tests; docs/architecture.md draws it.
pub mod base;

pub mod state;

pub mod work;

pub mod app;
