//! A remote agent that is down when the harness starts: the harness serves without it, tries
//! its card again with backoff, and once a real harness answers at its URL the agent joins the
//! registry, the roster in the static prefix is rebuilt once, and the join is logged at INFO.
//! One test in this file: it counts the static prefixes the process builds.

mod support {
    pub mod captured_logs;
    pub mod served;
}

use std::time::{Duration, Instant};

use support::captured_logs::CapturedLogs;
use support::served::Served;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::work::context::StaticPrefix;

/// How long a test waits for something that must happen: a guard against a hang, not a measure.
const HANG_GUARD: Duration = Duration::from_secs(30);

async fn runtime(dir: &tempfile::TempDir, text: &str) -> Runtime {
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    let config = Config::load(&path).unwrap();
    Runtime::build_with_env(config, |_| None).await.unwrap()
}

#[tokio::test]
async fn an_agent_down_at_start_up_joins_the_roster_once_it_answers_and_the_prefix_is_rebuilt_once()
{
    let logs = CapturedLogs::process_wide();
    // A port nothing listens on yet: the agent's card fetch is refused at start-up.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let front_dir = tempfile::tempdir().unwrap();
    let front = runtime(
        &front_dir,
        &format!(
            "[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"front.db\"\n\
             [[agents]]\nid = \"late\"\nurl = \"http://127.0.0.1:{port}\"\n"
        ),
    )
    .await;
    let prefix = front.prefix.clone();
    let registry = front.registry.clone();
    assert!(
        !prefix.current().as_str().contains("- late:"),
        "not in the roster while down"
    );
    assert_eq!(registry.current().ids(), ["self"]);
    let front = Served::start(front);

    let late_dir = tempfile::tempdir().unwrap();
    let late = runtime(
        &late_dir,
        &format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[store]\npath = \"late.db\"\n[card]\nname = \"Late Ledger\"\n"
        ),
    )
    .await;
    let builds_before_join = StaticPrefix::builds();
    let started = Instant::now();
    let late = Served::start(late);
    while !prefix.current().as_str().contains("- late: Late Ledger") {
        assert!(
            started.elapsed() < HANG_GUARD,
            "the late agent joined: {}",
            prefix.current().as_str()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "the agent joined {:?} after it started serving",
        started.elapsed()
    );
    assert_eq!(registry.current().ids(), ["self", "late"]);
    assert!(
        !prefix
            .current()
            .as_str()
            .contains("No remote agents are available"),
        "the agents section was rewritten for a roster with an agent"
    );
    assert_eq!(
        StaticPrefix::builds(),
        builds_before_join + 1,
        "the prefix was rebuilt once for the join"
    );

    let text = logs.text();
    let joined: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("`late` answered and joins the roster"))
        .collect();
    assert_eq!(joined.len(), 1, "{text}");
    assert!(joined[0].contains(" INFO "), "{}", joined[0]);
    assert!(
        text.lines()
            .any(|line| line.contains("unreachable at start-up; trying again")),
        "{text}"
    );
    late.stop().await;
    front.stop().await;
}
