//! The push-notification-config operations, written once for every binding (JSON-RPC, its 0.3
//! dialect, HTTP+JSON, gRPC): whether push is offered (`[push] allowed_hosts`), whether a
//! webhook's URL may be reached (its `host:port` allowed, every address its name resolves to
//! allowed: loopback, private and link-local only when listed by address), then the task
//! service's rules (participants only, caps, minted ids). The same check runs again at each
//! delivery (`app::push`), since what a name resolves to can change.
//!
//! Each binding calls these with `app.state.push.as_deref()` (`None`: push is off) and the
//! caller it identified.

use crate::app::server::validate;
use crate::base::config::HostPattern;
use crate::base::egress::{self, EgressError, Target};
use crate::base::protocol::jsonrpc::{PUSH_NOTIFICATION_NOT_SUPPORTED, RpcError};
use crate::base::protocol::requests::{
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    SendMessageRequest, TaskPushNotificationConfig, TaskPushNotificationConfigRequest,
};
use crate::state::tasks::Caller;
use crate::state::tasks::creator::sender_of;
use crate::state::tasks::push_configs::{self, PushConfigs};

/// The setting every refusal of a webhook's host names.
pub const ALLOWED_HOSTS_SETTING: &str = "push.allowed_hosts";

/// `CreateTaskPushNotificationConfig` (0.3: `tasks/pushNotificationConfig/set`).
pub(crate) async fn create_push_config(
    push: Option<&PushConfigs>,
    caller: &Caller,
    config: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, RpcError> {
    let configs = push.ok_or_else(push_not_supported)?;
    validate::task_id("taskId", &config.task_id)?;
    let config = push_configs::checked(config)?;
    check_webhook(configs.allowed_hosts(), "url", &config.url).await?;
    Ok(configs.create(caller, config).await?)
}

/// `GetTaskPushNotificationConfig`.
pub(crate) async fn get_push_config(
    push: Option<&PushConfigs>,
    caller: &Caller,
    request: TaskPushNotificationConfigRequest,
) -> Result<TaskPushNotificationConfig, RpcError> {
    let configs = push.ok_or_else(push_not_supported)?;
    validate::task_id("taskId", &request.task_id)?;
    Ok(configs.get(caller, &request.task_id, &request.id)?)
}

/// `ListTaskPushNotificationConfigs`.
pub(crate) async fn list_push_configs(
    push: Option<&PushConfigs>,
    caller: &Caller,
    request: ListTaskPushNotificationConfigsRequest,
) -> Result<ListTaskPushNotificationConfigsResponse, RpcError> {
    let configs = push.ok_or_else(push_not_supported)?;
    validate::task_id("taskId", &request.task_id)?;
    Ok(ListTaskPushNotificationConfigsResponse {
        configs: configs.list(caller, &request.task_id)?,
        next_page_token: String::new(),
    })
}

/// `DeleteTaskPushNotificationConfig`: idempotent, as §3.1.10 asks.
pub(crate) async fn delete_push_config(
    push: Option<&PushConfigs>,
    caller: &Caller,
    request: TaskPushNotificationConfigRequest,
) -> Result<(), RpcError> {
    let configs = push.ok_or_else(push_not_supported)?;
    validate::task_id("taskId", &request.task_id)?;
    Ok(configs
        .delete(caller, &request.task_id, &request.id)
        .await?)
}

/// `configuration.taskPushNotificationConfig` of a `SendMessage`: refused when push is off or
/// the webhook may not be reached. For a message to a running task the config is set on it
/// here, as its sender, before the message is worked, so every change the message causes is
/// pushed; a new task gets it in the transaction that creates it (the task service).
pub(crate) async fn prepare_send(
    push: Option<&PushConfigs>,
    caller: &Caller,
    request: &SendMessageRequest,
) -> Result<(), RpcError> {
    let Some(config) = request
        .configuration
        .as_ref()
        .and_then(|c| c.task_push_notification_config.clone())
    else {
        return Ok(());
    };
    // A client that asks for pushes must not believe it will get them.
    let configs = push.ok_or_else(push_not_supported)?;
    let config = push_configs::checked(config)?;
    let field = "configuration.taskPushNotificationConfig.url";
    check_webhook(configs.allowed_hosts(), field, &config.url).await?;
    let task_id = &request.message.task_id;
    if !task_id.is_empty() {
        let sender = sender_of(caller, &request.message)?;
        let config = TaskPushNotificationConfig {
            task_id: task_id.clone(),
            ..config
        };
        configs.create(&sender, config).await?;
    }
    Ok(())
}

/// Any of the four operations, or a config sent with a message, while push is off: the card
/// says `pushNotifications: false`, so §3.3.4 requires this error.
pub fn push_not_supported() -> RpcError {
    RpcError::new(
        PUSH_NOTIFICATION_NOT_SUPPORTED,
        format!(
            "push notifications are not supported: the agent card declares pushNotifications \
             false (the operator offers them by listing webhook hosts in {ALLOWED_HOSTS_SETTING})"
        ),
    )
}

/// Whether the harness may POST to `url`: http or https, its `host:port` in `allowed`, and
/// every address its name resolves to allowed. The refusal names the field and the setting.
///
/// A listed name that does not resolve now is accepted: the operator allowed that host, a
/// receiver is often given its DNS name after the config that names it, and a resolver that
/// fails for a moment must not refuse a client. Nothing is sent on this answer: every delivery
/// resolves the name again and checks each address (`app::push`), retrying with backoff while
/// the name does not resolve, so the check that keeps requests off private addresses still
/// stands before any connection.
pub async fn check_webhook(
    allowed: &[HostPattern],
    field: &str,
    url: &str,
) -> Result<(), RpcError> {
    let refuse = |why: String| RpcError::invalid_params(field, why);
    let uri: http::Uri = url
        .parse()
        .map_err(|_| refuse(format!("{url:?} is not a URL")))?;
    let target = Target::of_uri(&uri)
        .ok_or_else(|| refuse("the webhook must be an http or https URL with a host".into()))?;
    match egress::resolve_allowed(&target, &target.matching(allowed)).await {
        Ok(_) => Ok(()),
        Err(EgressError::NotAllowed(authority)) => Err(refuse(format!(
            "{authority} is not among the hosts webhooks may name ({ALLOWED_HOSTS_SETTING})"
        ))),
        Err(err @ EgressError::Prohibited { .. }) => {
            Err(refuse(format!("{err} ({ALLOWED_HOSTS_SETTING})")))
        }
        Err(EgressError::Dns { host, why }) => {
            tracing::info!(
                host = %host,
                "push: the webhook's host does not resolve now ({why}); the config is kept and \
                 each delivery resolves it again"
            );
            Ok(())
        }
        Err(err) => Err(refuse(err.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(list: &[&str]) -> Vec<HostPattern> {
        list.iter()
            .map(|p| HostPattern::parse(p).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn a_listed_name_that_does_not_resolve_is_kept_for_delivery_to_check() {
        // `.invalid` never resolves (RFC 6761).
        let allowed = patterns(&["hooks.invalid:443"]);
        check_webhook(&allowed, "url", "https://hooks.invalid/push")
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn an_unlisted_host_or_an_unlisted_loopback_address_is_refused() {
        let allowed = patterns(&["hooks.invalid:443"]);
        let unlisted = check_webhook(&allowed, "url", "https://other.invalid/push")
            .await
            .unwrap_err();
        assert!(
            unlisted
                .message
                .contains("other.invalid:443 is not among the hosts")
        );
        assert!(unlisted.message.contains(ALLOWED_HOSTS_SETTING));
        // A listed name that resolves to loopback: refused, the address is not listed.
        let by_name = patterns(&["localhost:9"]);
        let loopback = check_webhook(&by_name, "url", "http://localhost:9/push")
            .await
            .unwrap_err();
        assert!(loopback.message.contains("loopback, private or link-local"));
    }
}
