//! The process's metrics, in one registry every layer records into and the server renders as
//! Prometheus text at `GET /metrics`. Counters and histograms are kept by label values; a label
//! value from the model or a peer (a tool's name, an agent's id) is cut and cleaned to a label's
//! alphabet, and a family holds at most [`MAX_SERIES_PER_FAMILY`] series, so no caller can grow
//! the registry without bound: later values are counted under `other`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::Duration;

/// The most label sets one family tells apart: enough for every tool and agent of a real
/// deployment, few enough that a model calling made-up tool names cannot flood the registry.
pub const MAX_SERIES_PER_FAMILY: usize = 256;
/// The longest label value kept; a longer one is cut.
pub const MAX_LABEL_CHARS: usize = 64;
/// The upper bounds, in seconds, of the duration histograms' buckets: from a store write
/// (milliseconds) to a slow model call (minutes).
pub const DURATION_BUCKETS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0,
];
/// The label value a family's series past [`MAX_SERIES_PER_FAMILY`] are counted under.
pub const OTHER: &str = "other";

/// The metrics of this process.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::default);

/// A family of counters by label values.
struct Counters {
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    series: Mutex<BTreeMap<Vec<String>, u64>>,
}

/// One histogram's buckets, sum and count.
#[derive(Default, Clone)]
struct Histogram {
    buckets: [u64; DURATION_BUCKETS.len()],
    sum: f64,
    count: u64,
}

/// A family of duration histograms by label values.
struct Histograms {
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    series: Mutex<BTreeMap<Vec<String>, Histogram>>,
}

/// A value that goes up and down (open connections, open streams).
struct Gauge {
    name: &'static str,
    help: &'static str,
    value: AtomicI64,
}

/// Every metric the harness keeps; see docs/operations.md for what each means.
pub struct Metrics {
    tasks_created: Counters,
    tasks_ended: Counters,
    model_calls: Counters,
    model_call_seconds: Histograms,
    tokens: Counters,
    tool_calls: Counters,
    plugin_deadlines: Counters,
    subtasks: Counters,
    rate_limited: Counters,
    push_deliveries: Counters,
    store_write_seconds: Histograms,
    connections: Gauge,
    streams: Gauge,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            tasks_created: Counters::new("tiny_harness_tasks_created_total", "Tasks created.", &[]),
            tasks_ended: Counters::new(
                "tiny_harness_tasks_ended_total",
                "Tasks that reached a terminal state, by state.",
                &["state"],
            ),
            model_calls: Counters::new(
                "tiny_harness_model_calls_total",
                "Model calls (turns), by model and outcome.",
                &["model", "outcome"],
            ),
            model_call_seconds: Histograms::new(
                "tiny_harness_model_call_duration_seconds",
                "How long model calls took, retries included, by model and outcome.",
                &["model", "outcome"],
            ),
            tokens: Counters::new(
                "tiny_harness_model_tokens_total",
                "Tokens the model providers reported, by model and direction.",
                &["model", "direction"],
            ),
            tool_calls: Counters::new(
                "tiny_harness_tool_calls_total",
                "Tool calls, by tool and outcome (ok or error).",
                &["tool", "outcome"],
            ),
            plugin_deadlines: Counters::new(
                "tiny_harness_plugin_deadline_hits_total",
                "Plugin calls stopped at their deadline.",
                &[],
            ),
            subtasks: Counters::new(
                "tiny_harness_subtasks_total",
                "Sub-tasks created and ended, by agent and outcome (created, or the child's end state).",
                &["agent", "outcome"],
            ),
            rate_limited: Counters::new(
                "tiny_harness_rate_limited_total",
                "Requests refused with HTTP 429 by the per-caller rate limit.",
                &[],
            ),
            push_deliveries: Counters::new(
                "tiny_harness_push_deliveries_total",
                "Push-notification deliveries, by outcome (delivered, retried, refused, dropped).",
                &["outcome"],
            ),
            store_write_seconds: Histograms::new(
                "tiny_harness_store_write_duration_seconds",
                "How long a task's change took to commit in the store.",
                &[],
            ),
            connections: Gauge::new("tiny_harness_open_connections", "Open HTTP connections."),
            streams: Gauge::new("tiny_harness_open_streams", "Open event streams (SSE)."),
        }
    }
}

impl Metrics {
    /// A task was created.
    pub fn task_created(&self) {
        self.tasks_created.add(&[], 1);
    }

    /// A task reached `state` (its wire name).
    pub fn task_ended(&self, state: &str) {
        self.tasks_ended.add(&[state], 1);
    }

    /// A model call ended (`ok` or `error`) after `took`, reporting these tokens.
    pub fn model_call(&self, model: &str, ok: bool, took: Duration, input: u64, output: u64) {
        let outcome = if ok { "ok" } else { "error" };
        self.model_calls.add(&[model, outcome], 1);
        self.model_call_seconds.observe(&[model, outcome], took);
        self.tokens.add(&[model, "input"], input);
        self.tokens.add(&[model, "output"], output);
    }

    /// A tool call ended.
    pub fn tool_call(&self, tool: &str, ok: bool) {
        self.tool_calls
            .add(&[tool, if ok { "ok" } else { "error" }], 1);
    }

    /// A plugin call was stopped at its deadline.
    pub fn plugin_deadline_hit(&self) {
        self.plugin_deadlines.add(&[], 1);
    }

    /// A sub-task on `agent` was created (`created`) or ended (its end state's wire name).
    pub fn subtask(&self, agent: &str, outcome: &str) {
        self.subtasks.add(&[agent, outcome], 1);
    }

    /// A request was refused by the rate limit.
    pub fn rate_limited(&self) {
        self.rate_limited.add(&[], 1);
    }

    /// A push notification's delivery ended with `outcome`.
    pub fn push_delivery(&self, outcome: &str) {
        self.push_deliveries.add(&[outcome], 1);
    }

    /// A task's change committed after `took`.
    pub fn store_write(&self, took: Duration) {
        self.store_write_seconds.observe(&[], took);
    }

    /// A connection opened (`1`) or closed (`-1`).
    pub fn connections(&self, change: i64) {
        self.connections.value.fetch_add(change, Ordering::Relaxed);
    }

    /// An open connection, counted until the guard is dropped.
    pub fn open_connection(&'static self) -> Open {
        Open::new(&self.connections)
    }

    /// An open event stream, counted until the guard is dropped.
    pub fn open_stream(&'static self) -> Open {
        Open::new(&self.streams)
    }

    /// Every metric in the Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for family in [
            &self.tasks_created,
            &self.tasks_ended,
            &self.model_calls,
            &self.tokens,
            &self.tool_calls,
            &self.plugin_deadlines,
            &self.subtasks,
            &self.rate_limited,
            &self.push_deliveries,
        ] {
            family.render(&mut out);
        }
        self.model_call_seconds.render(&mut out);
        self.store_write_seconds.render(&mut out);
        for gauge in [&self.connections, &self.streams] {
            let _ = writeln!(out, "# HELP {} {}", gauge.name, gauge.help);
            let _ = writeln!(out, "# TYPE {} gauge", gauge.name);
            let _ = writeln!(
                out,
                "{} {}",
                gauge.name,
                gauge.value.load(Ordering::Relaxed)
            );
        }
        out
    }
}

impl Counters {
    fn new(name: &'static str, help: &'static str, labels: &'static [&'static str]) -> Counters {
        Counters {
            name,
            help,
            labels,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    fn add(&self, values: &[&str], by: u64) {
        let mut series = lock(&self.series);
        let key = series_key(&series, values);
        let count = series.entry(key).or_default();
        *count = count.saturating_add(by);
    }

    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} counter", self.name);
        let series = lock(&self.series);
        if series.is_empty() && self.labels.is_empty() {
            let _ = writeln!(out, "{} 0", self.name);
        }
        for (values, count) in series.iter() {
            let _ = writeln!(
                out,
                "{}{} {count}",
                self.name,
                labels(self.labels, values, None)
            );
        }
    }
}

impl Histograms {
    fn new(name: &'static str, help: &'static str, labels: &'static [&'static str]) -> Histograms {
        Histograms {
            name,
            help,
            labels,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    fn observe(&self, values: &[&str], took: Duration) {
        let seconds = took.as_secs_f64();
        let mut series = lock(&self.series);
        let key = series_key(&series, values);
        let histogram = series.entry(key).or_default();
        for (bucket, bound) in histogram.buckets.iter_mut().zip(DURATION_BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        histogram.sum += seconds;
        histogram.count += 1;
    }

    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} histogram", self.name);
        let series = lock(&self.series);
        for (values, histogram) in series.iter() {
            for (count, bound) in histogram.buckets.iter().zip(DURATION_BUCKETS) {
                let le = labels(self.labels, values, Some(&bound.to_string()));
                let _ = writeln!(out, "{}_bucket{le} {count}", self.name);
            }
            let inf = labels(self.labels, values, Some("+Inf"));
            let plain = labels(self.labels, values, None);
            let _ = writeln!(out, "{}_bucket{inf} {}", self.name, histogram.count);
            let _ = writeln!(out, "{}_sum{plain} {}", self.name, histogram.sum);
            let _ = writeln!(out, "{}_count{plain} {}", self.name, histogram.count);
        }
    }
}

impl Gauge {
    fn new(name: &'static str, help: &'static str) -> Gauge {
        Gauge {
            name,
            help,
            value: AtomicI64::new(0),
        }
    }
}

/// One open thing a gauge counts: counted when made, uncounted when dropped, however the
/// thing ends.
pub struct Open(&'static Gauge);

impl Open {
    fn new(gauge: &'static Gauge) -> Open {
        gauge.value.fetch_add(1, Ordering::Relaxed);
        Open(gauge)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.value.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The key the values are counted under: cleaned, and [`OTHER`] for each once the family is
/// full and they are new.
fn series_key<V>(series: &BTreeMap<Vec<String>, V>, values: &[&str]) -> Vec<String> {
    let key: Vec<String> = values.iter().map(|v| label_value(v)).collect();
    if series.len() >= MAX_SERIES_PER_FAMILY && !series.contains_key(&key) {
        return values.iter().map(|_| OTHER.to_string()).collect();
    }
    key
}

/// A label value as it is kept: letters, digits and `_ - . : /` only (others become `_`), cut
/// at [`MAX_LABEL_CHARS`]; nothing in it needs escaping in the text format.
fn label_value(value: &str) -> String {
    value
        .chars()
        .take(MAX_LABEL_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `{name="value",…}` with `le` last when given; empty for no labels at all.
fn labels(names: &[&str], values: &[String], le: Option<&str>) -> String {
    let mut pairs: Vec<String> = names
        .iter()
        .zip(values)
        .map(|(name, value)| format!("{name}=\"{value}\""))
        .collect();
    if let Some(le) = le {
        pairs.push(format!("le=\"{le}\""));
    }
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_histograms_and_gauges_render_in_the_text_format_golden() {
        let metrics = Metrics::default();
        metrics.task_created();
        metrics.task_ended("TASK_STATE_COMPLETED");
        metrics.model_call("default", true, Duration::from_millis(30), 120, 7);
        metrics.connections(2);
        metrics.connections(-1);
        let text = metrics.render();
        for line in [
            "# TYPE tiny_harness_tasks_created_total counter",
            "tiny_harness_tasks_created_total 1",
            "tiny_harness_tasks_ended_total{state=\"TASK_STATE_COMPLETED\"} 1",
            "tiny_harness_model_calls_total{model=\"default\",outcome=\"ok\"} 1",
            "tiny_harness_model_tokens_total{model=\"default\",direction=\"input\"} 120",
            "# TYPE tiny_harness_model_call_duration_seconds histogram",
            "tiny_harness_model_call_duration_seconds_bucket{model=\"default\",outcome=\"ok\",le=\"0.025\"} 0",
            "tiny_harness_model_call_duration_seconds_bucket{model=\"default\",outcome=\"ok\",le=\"0.05\"} 1",
            "tiny_harness_model_call_duration_seconds_bucket{model=\"default\",outcome=\"ok\",le=\"+Inf\"} 1",
            "tiny_harness_model_call_duration_seconds_count{model=\"default\",outcome=\"ok\"} 1",
            "tiny_harness_rate_limited_total 0",
            "tiny_harness_open_connections 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
        }
    }

    #[test]
    fn hostile_label_values_are_cleaned_and_cannot_grow_a_family_past_its_cap() {
        let metrics = Metrics::default();
        metrics.tool_call("x\"} 1\nforged_total{a=\"", true);
        for n in 0..(MAX_SERIES_PER_FAMILY + 50) {
            metrics.tool_call(&format!("made_up_{n}"), false);
        }
        let text = metrics.render();
        assert!(!text.contains("forged_total{"), "{text}");
        assert!(text.contains("tool=\"x___1_forged_total_a__\""), "{text}");
        let series = text
            .lines()
            .filter(|l| l.starts_with("tiny_harness_tool_calls_total{"))
            .count();
        assert_eq!(series, MAX_SERIES_PER_FAMILY + 1, "the cap and `other`");
        assert!(text.contains("tool_calls_total{tool=\"other\",outcome=\"other\"} 51"));
    }
}
