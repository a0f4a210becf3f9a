//! Start-up registry build with 50 agents, one of them slow: shows that the cards are fetched at
//! once, so start-up waits about as long as the slowest fetch, not the sum of them all.
//!
//! A printing bench (`harness = false`): 50 real card servers on loopback, each answering after a
//! set delay; `Registry::discover` is timed over several runs and the figures printed.
//! Run with `cargo bench -p tiny-harness --bench startup_agents`.

use std::time::{Duration, Instant};

use tiny_harness::base::config::AgentConfig;
use tiny_harness::base::protocol::card::default_card;
use tiny_harness::work::agents::{Caps, Registry, build_roster, render_agents};

mod support {
    pub mod cards;
}
use support::cards::card_server;

/// How many agents are configured.
const AGENTS: usize = 50;
/// How long every ordinary agent takes to answer: a plausible network round trip.
const ORDINARY_DELAY: Duration = Duration::from_millis(20);
/// How long the one slow agent takes.
const SLOW_DELAY: Duration = Duration::from_millis(1000);
/// Runs per scenario; the median is reported.
const RUNS: usize = 5;

async fn agents(slow_delay: Duration) -> Vec<AgentConfig> {
    let mut agents = Vec::with_capacity(AGENTS);
    for i in 0..AGENTS {
        let delay = if i == AGENTS / 2 {
            slow_delay
        } else {
            ORDINARY_DELAY
        };
        agents.push(AgentConfig {
            id: format!("agent-{i:02}"),
            url: card_server(i, delay).await,
            version: None,
            token_env: None,
            api_key_env: None,
            delegator: None,
            oauth2: None,
        });
    }
    agents
}

/// Times `RUNS` discoveries; returns the sorted durations and the last registry's size.
async fn time_discovery(agents: &[AgentConfig], timeout: Duration) -> (Vec<Duration>, usize) {
    let mut times = Vec::with_capacity(RUNS);
    let mut registered = 0;
    for _ in 0..RUNS {
        let own = default_card("http://127.0.0.1:8080");
        let started = Instant::now();
        let discovery = Registry::discover(own, "http://127.0.0.1:8080", agents, timeout).await;
        times.push(started.elapsed());
        registered = discovery.registry.ids().len() - 1;
    }
    times.sort();
    (times, registered)
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn report(title: &str, times: &[Duration], registered: usize, sum: Duration, slowest: Duration) {
    println!("{title}");
    println!("  registered:            {registered} of {AGENTS}");
    println!(
        "  wall time min/median/max: {} / {} / {}",
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
    println!("  slowest single fetch:  {}", ms(slowest));
    println!(
        "  sum of all delays:     {} (what fetching one by one would cost)",
        ms(sum)
    );
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(async {
        let ordinary_sum = ORDINARY_DELAY * (AGENTS as u32 - 1);

        let within = agents(SLOW_DELAY).await;
        let (times, registered) = time_discovery(&within, Duration::from_secs(5)).await;
        report(
            &format!(
                "{AGENTS} agents, one answering in {} (timeout 5 s):",
                ms(SLOW_DELAY)
            ),
            &times,
            registered,
            ordinary_sum + SLOW_DELAY,
            SLOW_DELAY,
        );

        let beyond = agents(Duration::from_secs(30)).await;
        let timeout = Duration::from_millis(500);
        let (times, registered) = time_discovery(&beyond, timeout).await;
        report(
            &format!(
                "{AGENTS} agents, one hanging for 30 s (timeout {}):",
                ms(timeout)
            ),
            &times,
            registered,
            ordinary_sum + timeout,
            timeout,
        );

        let own = default_card("http://127.0.0.1:8080");
        let discovery = Registry::discover(
            own,
            "http://127.0.0.1:8080",
            &within,
            Duration::from_secs(5),
        )
        .await;
        let started = Instant::now();
        let mut section = String::new();
        for _ in 0..100 {
            section = render_agents(&build_roster(&discovery.registry, Caps::DEFAULT));
        }
        println!(
            "roster build and render for {} agents: {:.1} µs each, {} characters",
            AGENTS + 1,
            started.elapsed().as_secs_f64() * 1e6 / 100.0,
            section.chars().count()
        );
    });
}
