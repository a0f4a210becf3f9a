//! Tasks and what keeps them: the records the store persists (task rows, the harness's extension),
//! the SQLite store, and the task service above it (the hub, events, access rules, the engine's
//! port).
//!
//! Bottom to top, each importing only from those before it (and the folders below).

pub mod records;

pub mod store;

pub mod tasks;
