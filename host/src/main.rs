//! The `harness` command: `serve`, `check`, `--version`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tiny_harness::agents::{Registry, build_roster, own_card};
use tiny_harness::runtime::{Runtime, StartError, load_config};

/// Exit status for a configuration error, so scripts can tell it from a crash.
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
}

fn main() -> ExitCode {
    init_tracing();
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
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            let is_config = err
                .downcast_ref::<StartError>()
                .is_some_and(|e| matches!(e, StartError::Config(_) | StartError::Model(_)))
                || err
                    .downcast_ref::<tiny_harness::config::ConfigError>()
                    .is_some();
            if is_config {
                ExitCode::from(EXIT_CONFIG)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

async fn serve(config: Option<PathBuf>) -> anyhow::Result<()> {
    let config = load_config(config.as_deref()).map_err(StartError::from)?;
    let runtime = Runtime::build(config).await?;
    let listener = runtime.bind().await?;
    runtime.serve(listener, shutdown_signal()).await?;
    Ok(())
}

async fn check(config: Option<PathBuf>) -> anyhow::Result<()> {
    let config = load_config(config.as_deref()).map_err(StartError::from)?;
    let model = tiny_harness::model::build_model(
        &config.model,
        |path| config.resolve(path),
        |name| std::env::var(name).ok(),
    )
    .map_err(StartError::from)?;
    let source = config
        .source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "embedded default".to_string());
    println!("configuration: {source}");
    println!("listen:        {}", config.server.bind);
    println!("base URL:      {}", config.server.effective_base_url());
    println!("model:         {}", model.describe());
    println!(
        "store:         {}",
        config.resolve(&config.store.path).display()
    );
    println!(
        "limits:        max_turns {}, turn budget {} tokens, compaction at {}",
        config.limits.max_turns,
        config.context.turn_budget_tokens,
        config.context.compaction_fraction
    );
    print_agents(&config).await;
    Ok(())
}

/// Fetches the cards as `serve` would and says which agents would be registered, and why any
/// would not. Card text is printed as the model would read it: cleaned and capped.
async fn print_agents(config: &tiny_harness::config::Config) {
    let base_url = config.server.effective_base_url();
    let discovery = Registry::discover(
        own_card(&config.card, &base_url),
        &base_url,
        &config.agents,
        config.roster.card_timeout(),
    )
    .await;
    let roster = build_roster(&discovery.registry, config.roster.caps());
    let own = roster.self_entry();
    println!("card:          {} (self: this harness)", own.name);
    if config.agents.is_empty() {
        println!("agents:        (none)");
    }
    for agent in &config.agents {
        let entry = roster.entries().iter().find(|e| e.id == agent.id);
        let refusal = discovery.refused.iter().find(|r| r.id == agent.id);
        let verdict = match (entry, refusal) {
            (Some(entry), _) => format!(
                "registered as \"{}\" with {} skills",
                entry.name,
                entry.skills.len() + entry.omitted_skills
            ),
            (None, Some(refused)) => format!("not registered: {}", refused.reason),
            (None, None) => "not registered".to_string(),
        };
        println!("agent:         {} at {}: {verdict}", agent.id, agent.url);
    }
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
