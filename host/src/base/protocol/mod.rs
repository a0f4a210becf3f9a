//! The A2A 1.0 protocol as data: its types, the agent card, header and media-type constants,
//! error codes and the JSON-RPC envelope, and the 0.3 wire types with their conversions (the
//! server's 0.3 dialect and the client both use them). No I/O and nothing of the harness: every
//! layer above may import it.

pub mod card;
pub mod delegation;
pub mod extension;
pub mod headers;
pub mod jsonrpc;
pub mod proto;
pub mod requests;
pub mod types;
pub mod v03;
