//! Tasks as the harness keeps them: the A2A task, its extension, who may see and change it.

pub mod extension;
