//! A2A 0.3 on the wire: its shapes ([`wire`]) and their conversions to and from 1.0
//! ([`convert`]).

pub mod convert;
pub mod wire;

/// `message/send`.
pub const SEND: &str = "message/send";
/// `message/stream`.
pub const STREAM: &str = "message/stream";
/// `tasks/get`.
pub const GET: &str = "tasks/get";
/// `tasks/cancel`.
pub const CANCEL: &str = "tasks/cancel";
/// `tasks/resubscribe`.
pub const RESUBSCRIBE: &str = "tasks/resubscribe";
/// The prefix of the four push-notification-config methods (`…/set`, `/get`, `/list`, `/delete`).
pub const PUSH_CONFIG_PREFIX: &str = "tasks/pushNotificationConfig/";
/// `agent/getAuthenticatedExtendedCard`.
pub const EXTENDED_CARD: &str = "agent/getAuthenticatedExtendedCard";

/// Whether a method name is a 0.3 one.
pub fn is_method(method: &str) -> bool {
    method.contains('/')
}
