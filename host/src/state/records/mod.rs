//! What the store persists of a task: the A2A task with the harness's extension of it
//! ([`record::TaskRecord`]) and the extension itself ([`extension`]). Below the store, so the
//! store and everything above it share one definition.

pub mod extension;
pub mod record;
