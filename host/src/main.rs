//! The `harness` command: `serve`, `check`, `plugins`, `context`, `plugin new`, `--version`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tiny_harness::app::operator;
use tiny_harness::app::runtime::logging;
use tiny_harness::app::runtime::{Runtime, StartError, load_config};
use tiny_harness::app::scaffold::{self, Lang, NewPlugin, ScaffoldError, Sdk};
use tiny_harness::base::config::LogFormat;

/// A request allocates and frees many small values (JSON, records, events) on several threads;
/// mimalloc's per-thread heaps serve them with less work and contention than the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit status for a configuration error, or a store another process holds, so scripts can tell
/// it from a crash; also `plugin new` refusing a name or an existing folder.
const EXIT_CONFIG: u8 = 2;
/// Exit status for a command line clap cannot parse (an unknown subcommand or flag): `EX_USAGE`
/// of BSD's sysexits.h, so it is not mistaken for a configuration error (clap's own is 2).
const EXIT_USAGE: u8 = 64;

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
        /// Also send each model one minimal request; exit 1 when one is not answered.
        #[arg(long)]
        probe: bool,
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
    /// Write plugins.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Write a buildable plugin folder with one section and one tool, and print how to build it.
    New {
        /// The plugin's name: lower-case letters, digits and single dashes.
        name: String,
        /// The language of the plugin.
        #[arg(long, value_parser = Lang::NAMES)]
        lang: String,
        /// The folder to create (it must not exist); default ./NAME.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Rust only: depend on the guest SDK at this path (a checkout's plugins/sdk-rust)
        /// instead of by git.
        #[arg(long)]
        sdk_path: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            // `--help` and `--version` are printed to stdout and are no error.
            return if err.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
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
            Command::Check { config, probe } => check(config, probe).await,
            Command::Plugins { config } => plugins(config).await,
            Command::Context { config } => context(config).await,
            Command::Plugin {
                command:
                    PluginCommand::New {
                        name,
                        lang,
                        dir,
                        sdk_path,
                    },
            } => plugin_new(name, &lang, dir, sdk_path),
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
                        | StartError::Mcp(_)
                        | StartError::Skill(_)
                        | StartError::StoreInUse(_)
                        | StartError::Telemetry(_)
                )
            }) || err
                .downcast_ref::<tiny_harness::base::config::ConfigError>()
                .is_some()
                || err.downcast_ref::<ScaffoldError>().is_some();
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

async fn check(config: Option<PathBuf>, probe: bool) -> anyhow::Result<()> {
    let config = configured(config.as_deref())?;
    print!("{}", operator::check(&config).await?);
    if probe {
        let (lines, answered) = operator::probe(&config).await?;
        print!("{lines}");
        anyhow::ensure!(answered, "a model did not answer the probe");
    }
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

fn plugin_new(
    name: String,
    lang: &str,
    dir: Option<PathBuf>,
    sdk_path: Option<PathBuf>,
) -> anyhow::Result<()> {
    let lang = Lang::parse(lang).expect("clap checked --lang");
    let plugin = NewPlugin {
        dir: dir.unwrap_or_else(|| PathBuf::from(&name)),
        name,
        lang,
        sdk: sdk_path.map_or(Sdk::Git, Sdk::Path),
    };
    let written = scaffold::write(&plugin)?;
    print!("{}", scaffold::report(&written, lang));
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
