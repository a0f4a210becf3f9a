//! Builds the builtin plugin (`builtin/`, a Rust component for `wasm32-wasip2`) so the harness
//! binary embeds it: `cargo install` then gives a working harness with no files beside it; and
//! generates the gRPC binding's types and service from `proto/a2a.proto`.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// The builtin's stack, in bytes (Rust's default for wasm is 1 MiB). A fresh instance per call
/// has its whole memory, stack included, set back to zeros when the call ends, so the stack's
/// size is paid on every tool call: at 1 MiB a `create_plan` call took 120-150 µs on an idle
/// 2-vCPU VM, at 128 KiB 71 µs. At 64 KiB the stack and the data fit the builtin's memory in
/// two pages instead of three (64 KiB less to set back per call). The builtin's deepest path
/// parses tool arguments the host has already checked against flat schemas; an overflow would
/// be a trap (the stack sits below the data, so it runs out of bounds), reported as the
/// plugin's failure like any other.
const BUILTIN_STACK_BYTES: u32 = 64 * 1024;

/// The proto package of A2A 1.0 whose messages get protobuf-JSON serde.
const A2A_PROTO_PACKAGE: &str = ".lf.a2a.v1";

fn main() {
    compile_a2a_proto();
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir.join("..");
    for watched in [
        "builtin/src",
        "builtin/Cargo.toml",
        "builtin/Cargo.lock",
        "plugins/sdk-rust/src",
        "plugins/sdk-rust/Cargo.toml",
        "wit",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    let target_dir = out_dir.join("builtin-target");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--manifest-path",
        ])
        .arg(root.join("builtin/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        // The outer build's settings are for the host target, not this one.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_PROFILE_RELEASE_DEBUG")
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            format!("-Clink-arg=-zstack-size={BUILTIN_STACK_BYTES}"),
        )
        .status()
        .expect("cannot run cargo to build the builtin plugin");
    if !status.success() {
        panic!(
            "building the builtin plugin for wasm32-wasip2 failed; if the target is missing, run \
             `rustup target add wasm32-wasip2`"
        );
    }
    let built = target_dir.join("wasm32-wasip2/release/tiny_harness_builtin.wasm");
    std::fs::copy(&built, out_dir.join("builtin.wasm"))
        .unwrap_or_else(|err| panic!("cannot copy {}: {err}", built.display()));
}

/// `proto/a2a.proto` to Rust: prost messages, the tonic service and client (no transport: the
/// server is the crate's own connection loop), and pbjson's protobuf-JSON serde for every
/// message, through which the gRPC binding converts to and from the protocol types. Compiled by
/// protox (pure Rust), so no `protoc` is needed; the well-known types are pbjson-types'.
fn compile_a2a_proto() {
    use prost::Message as _;
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let proto_dir = manifest_dir.join("proto");
    println!("cargo:rerun-if-changed={}", proto_dir.display());
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    let descriptors = protox::compile([proto_dir.join("a2a.proto")], [&proto_dir])
        .unwrap_or_else(|err| panic!("cannot compile proto/a2a.proto: {err}"));
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .build_transport(false)
        // Not prost-types' well-known types (no serde) but pbjson-types' (protobuf-JSON serde).
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .out_dir(&out_dir)
        .compile_fds(descriptors.clone())
        .unwrap_or_else(|err| panic!("cannot generate the gRPC code of proto/a2a.proto: {err}"));
    let mut json = pbjson_build::Builder::new();
    json.register_descriptors(&descriptors.encode_to_vec())
        .and_then(|json| {
            json.out_dir(&out_dir)
                .ignore_unknown_fields()
                .build(&[A2A_PROTO_PACKAGE])
        })
        .unwrap_or_else(|err| panic!("cannot generate the protobuf-JSON code of a2a.proto: {err}"));
}
