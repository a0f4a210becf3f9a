//! Text from outside the harness, made safe to show: untrusted blocks for the model's context
//! ([`untrusted`]) and escaped, capped fields for the logs ([`log_field`]). The bottom layer:
//! it imports nothing of the harness, so every layer above cleans text the same way.

pub mod cut;
pub mod log_field;
pub mod untrusted;
