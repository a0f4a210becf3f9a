//! The context window: the static prefix, the per-task sections, untrusted blocks, the token
//! estimate and compaction.

pub mod budget;
pub mod compaction;
pub mod sections;
pub mod window;

pub use crate::base::text::untrusted::{UNTRUSTED_PREAMBLE, neutralise, untrusted};
pub use sections::{SkillEntry, section};
pub use window::{HistoryItem, LivePrefix, StaticPrefix, TurnInput, assemble, estimate_tokens};
