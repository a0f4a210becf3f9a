//! The foundation: what every other layer stands on, importing nothing above it. Untrusted text
//! and log fields, the metrics registry, the A2A protocol's wire types (no I/O, no tasks) and
//! the capped body reader import nothing of the harness; traces (`telemetry`) use only the text
//! cleaning; configuration is plain data; the language-model providers sit on top.
//!
//! Bottom to top, each importing only from those before it.

pub mod text;

pub mod telemetry;

pub mod metrics;

pub mod protocol;

pub mod http_body;

pub mod config;

pub mod egress;

pub mod model;
