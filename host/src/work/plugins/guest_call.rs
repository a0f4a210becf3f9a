//! One tool call inside a plugin, as `threads` runs it (its first slice on the caller's thread,
//! the rest on the plugin threads): a fresh store and instance,
//! the guest's `invoke` within its deadline, and what came of it (the guest's answer or why it
//! failed, and the effects it asked for). Everything it holds is owned, so it can be sent there.

use std::sync::Arc;
use std::time::Duration;

use super::bindings::types::ToolError as WitToolError;
use super::call_state::CallState;
use super::errors::describe_failure;
use super::loader::LoadedPlugin;
use super::plugin_log::CallLog;
use super::sandbox::{CallLimits, HostWait, store};
use crate::work::tools::Effect;

/// Time beyond the guest deadline allowed for instantiation and host functions before the call
/// is abandoned anyway.
pub const CALL_GRACE: Duration = Duration::from_secs(2);

/// A call ready to run: which plugin, which tool, with what, for which task.
pub struct GuestCall {
    pub plugin: Arc<LoadedPlugin>,
    pub limits: CallLimits,
    pub tool: String,
    /// The arguments as JSON text, already validated against the tool's schema.
    pub arguments: String,
    pub state: CallState,
}

/// How a call ended.
#[derive(Debug)]
pub enum GuestResult {
    /// The guest returned: its text, or its own `tool-error`.
    Returned(Result<String, WitToolError>),
    /// It trapped, ran out of time or memory: why, in words.
    Failed(String),
}

/// How a call ended and the effects it asked for, in order.
#[derive(Debug)]
pub struct GuestReport {
    pub result: GuestResult,
    pub effects: Vec<Effect>,
    /// Whether the call asked for a child while it could only run in the process
    /// ([`CallState::in_process_only`]): its result is then not the call's.
    pub asked_outside: bool,
}

impl GuestCall {
    /// Instantiates the plugin in a fresh store and calls its `invoke`.
    pub async fn run(self) -> GuestReport {
        let GuestCall {
            plugin,
            limits,
            tool,
            arguments,
            state,
        } = self;
        let log = CallLog::new(&plugin.file, plugin.log_rate.clone());
        // The engine the plugin was compiled for (see `sandbox::Engines`).
        let mut store = store(
            plugin.pre.engine(),
            log,
            limits,
            Some(state),
            plugin.grant.clone(),
        );
        let host_wait = store.data().host_wait.clone();
        let run = async {
            let instance = plugin.pre.instantiate_async(&mut store).await?;
            instance.call_invoke(&mut store, &tool, &arguments).await
        };
        let outcome = within_deadline(limits.deadline + CALL_GRACE, &host_wait, run).await;
        let result = match outcome {
            None => GuestResult::Failed(format!(
                "it did not finish within {} ms",
                (limits.deadline + CALL_GRACE).as_millis()
            )),
            Some(Err(err)) => GuestResult::Failed(describe_failure(&err, store.data(), limits)),
            Some(Ok(returned)) => GuestResult::Returned(returned),
        };
        let (effects, asked_outside) = store
            .data_mut()
            .call
            .take()
            .map(|c| (c.effects, c.asked_outside))
            .unwrap_or_default();
        GuestReport {
            result,
            effects,
            asked_outside,
        }
    }
}

/// Runs `call` for at most `limit` of its own time: time the host spent on its own network work
/// (in `host_wait`) extends the limit by as much. `None` when the call ran out of time.
async fn within_deadline<T>(
    limit: Duration,
    host_wait: &HostWait,
    call: impl std::future::Future<Output = T>,
) -> Option<T> {
    let started = tokio::time::Instant::now();
    tokio::pin!(call);
    loop {
        let until = started + limit + host_wait.total();
        match tokio::time::timeout_at(until, &mut call).await {
            Ok(value) => return Some(value),
            Err(_) if started + limit + host_wait.total() > tokio::time::Instant::now() => {}
            Err(_) => return None,
        }
    }
}
