//! Agents a task may be delegated to, and what the model may know of them.
//!
//! At start-up [`Registry::discover`] fetches every configured agent's card at once
//! ([`card_fetch`], bounded in time and size), checks it ([`card_check`]: A2A 1.0, no unknown
//! required extension; [`security`]: the credentials it asks for are configured) and registers
//! those that pass beside `self`, this harness, whose card is [`own_card()`] ([`card_security`]
//! adds what it declares about authentication and the extended card). From the registry,
//! [`build_roster`] keeps only each
//! agent's id, name, description and skills, [`clean()`]ed and capped; [`render_agents`] writes
//! the roster into the static prefix's `agents` section, inside an untrusted block. Later, a
//! sub-task names its agent by id and [`Registry::resolve`] either finds it or answers with
//! [`UnknownAgent`], without contacting anything. An agent whose card could not be fetched at
//! start-up is tried again with backoff ([`late`]) and joins the [`LiveRegistry`] once it answers.

pub mod card_check;
pub mod card_fetch;
pub mod card_security;
pub mod clean;
pub mod client;
pub mod late;
pub mod own_card;
pub mod own_url;
pub mod registry;
pub mod roster;
pub mod section;
pub mod security;
pub mod unknown;

pub use card_check::{CardProblem, check_card};
pub use card_fetch::{CardFetcher, FetchError};
pub use card_security::served_cards;
pub use clean::clean;
pub use late::{LiveRegistry, register_when_reachable};
pub use own_card::own_card;
pub use registry::{Discovery, Refusal, RefusedAgent, RegisteredAgent, Registry, SELF_ID};
pub use roster::{Caps, Cut, Roster, RosterEntry, SkillSummary, build_roster};
pub use section::{
    AGENT_PARAMETER_DESCRIPTION, MODEL_PARAMETER_DESCRIPTION, render_agents,
    render_agents_with_models,
};
pub use security::{AgentAuth, SecurityProblem, plan_security};
pub use unknown::{MAX_ECHOED_ID_CHARS, UNKNOWN_AGENT_CODE, UnknownAgent};
