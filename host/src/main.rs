//! The `harness` command: `serve`, `check`, `plugins`, `context`, `--version`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tiny_harness::app::operator;
use tiny_harness::app::runtime::logging;
use tiny_harness::app::runtime::{Runtime, StartError, load_config};
use tiny_harness::base::config::LogFormat;

/// A request allocates and frees many small values (JSON, records, events) on several threads;
/// mimalloc's per-thread heaps serve them with less work and contention than the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit status for a configuration error, or a store another process holds, so scripts can tell
/// it from a crash.
const EXIT_CONFIG: u8 = 2;

#[derive(Parser)]
#[command(
    name = "harness",
    version,
    about = "An agent harness that serves tasks over A2A 1.0"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve A2A on server.bind until SIGINT or SIGTERM.
    Serve {
        /// The configuration file; default ./config.toml, else the embedded default.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Validate the configuration and print what would run.
    Check {
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// List the loaded plugins with the sections and tools each contributes.
    Plugins {
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print the static prefix exactly as the model receives it, then the tool definitions.
    Context {
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve { config } => serve(config).await,
            Command::Check { config } => check(config).await,
            Command::Plugins { config } => plugins(config).await,
            Command::Context { config } => context(config).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            let is_config = err.downcast_ref::<StartError>().is_some_and(|e| {
                matches!(
                    e,
                    StartError::Config(_)
                        | StartError::Model(_)
                        | StartError::Plugin(_)
                        | StartError::Skill(_)
                        | StartError::StoreInUse(_)
                )
            }) || err
                .downcast_ref::<tiny_harness::base::config::ConfigError>()
                .is_some();
            if is_config {
                ExitCode::from(EXIT_CONFIG)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// The configuration, read before anything is logged so that the log takes its `[log]` format
/// from it (a configuration that cannot be read is reported in the text format).
fn configured(
    path: Option<&std::path::Path>,
) -> Result<tiny_harness::base::config::Config, StartError> {
    let config = load_config(path).map_err(|err| {
        logging::init(LogFormat::Text);
        StartError::from(err)
    })?;
    logging::init(config.log.format);
    Ok(config)
}

async fn serve(config: Option<PathBuf>) -> anyhow::Result<()> {
    let config = configured(config.as_deref())?;
    let runtime = Runtime::build(config).await?;
    runtime.serve(shutdown_signal()).await?;
    Ok(())
}

async fn check(config: Option<PathBuf>) -> anyhow::Result<()> {
    let config = configured(config.as_deref())?;
    print!("{}", operator::check(&config).await?);
    Ok(())
}

async fn plugins(config: Option<PathBuf>) -> anyhow::Result<()> {
    let config = configured(config.as_deref())?;
    print!("{}", operator::plugin_list(&config).await?);
    Ok(())
}

async fn context(config: Option<PathBuf>) -> anyhow::Result<()> {
    let config = configured(config.as_deref())?;
    print!("{}", operator::context(&config).await?);
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        tokio::signal::ctrl_c()
            .await
            .context("cannot listen for Ctrl-C")
            .ok();
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::warn!("cannot listen for SIGTERM: {err}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
