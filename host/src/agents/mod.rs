//! Agents a task may be delegated to, and what the model may know of them.
//!
//! At start-up [`Registry::discover`] fetches every configured agent's card at once
//! ([`card_fetch`], bounded in time and size), checks it ([`card_check`]: A2A 1.0, no
//! authentication, no unknown required extension) and registers those that pass beside `self`,
//! this harness. Later, a sub-task names its agent by id and [`Registry::resolve`] either finds
//! it or answers with [`UnknownAgent`], without contacting anything.

pub mod card_check;
pub mod card_fetch;
pub mod clean;
pub mod registry;
pub mod unknown;

pub use card_check::{CardProblem, check_card};
pub use card_fetch::{CardFetcher, FetchError};
pub use clean::clean;
pub use registry::{Discovery, RefusedAgent, Refusal, RegisteredAgent, Registry, SELF_ID};
pub use unknown::{UNKNOWN_AGENT_CODE, UnknownAgent};
