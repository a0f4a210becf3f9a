//! The application on top: the A2A server (every binding, connections, limits, callers) above the
//! task service, the push worker that delivers its webhooks' notifications, the runtime that wires every part together, the operator's commands, and
//! the folder `harness plugin new` writes.
//!
//! Bottom to top, each importing only from those before it (and the folders below).

pub mod server;

pub mod push;

pub mod runtime;

pub mod operator;

pub mod scaffold;
