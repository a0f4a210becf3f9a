//! The HTTP headers that carry A2A service parameters (§3.2.6, §9.2) and the caller's identity,
//! and the protocol versions they name.

/// The protocol version the client speaks.
pub const A2A_VERSION_HEADER: &str = "a2a-version";
/// Comma-separated URIs of the extensions the client wants to use; the answer echoes the ones
/// activated under the same name.
pub const A2A_EXTENSIONS_HEADER: &str = "a2a-extensions";
/// The same list under its A2A 0.3 name, which 0.3 clients send (and read back) instead.
pub const LEGACY_EXTENSIONS_HEADER: &str = "x-a2a-extensions";
/// Who the caller is; read by the server's `Caller::from_header`.
pub const PARTICIPANT_HEADER: &str = "x-participant-id";
/// The `Major.Minor` version this server speaks.
pub const SUPPORTED_VERSION: &str = "1.0";
/// The older version spoken on the JSON-RPC endpoint, by its 0.3 method names.
pub const LEGACY_VERSION: &str = "0.3";
