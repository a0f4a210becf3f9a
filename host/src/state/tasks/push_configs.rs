//! The four push-config operations as the task service answers them: only a participant of a
//! task (who may see it) sets, reads, lists or deletes its configs; an id is minted when the
//! client gives none; every field the client sends is capped. Whether a webhook's host may be
//! reached is the server's check (`[push] allowed_hosts`), made before these run.

use std::sync::Arc;

use super::hub::TaskHub;
use super::ids::new_store_key;
use super::service::{Caller, TaskError};
use crate::base::config::HostPattern;
use crate::base::protocol::requests::{SendMessageConfiguration, TaskPushNotificationConfig};
use crate::state::records::record::TaskRecord;
use crate::state::store::{Saved, StoreError, Tx};

/// Configs one task may have: a task has a few listeners (its client, perhaps a monitor), and
/// each change is queued once per config.
pub const MAX_CONFIGS_PER_TASK: usize = 8;
/// The longest webhook URL: real ones are far shorter; this bounds what the store keeps.
pub const MAX_URL_CHARS: usize = 2_048;
/// The longest token (`X-A2A-Notification-Token`): a random string, not a document.
pub const MAX_TOKEN_CHARS: usize = 512;
/// The longest config id a client may choose.
pub const MAX_CONFIG_ID_CHARS: usize = 128;
/// The longest `authentication.credentials`: a bearer token or a JWT fits.
pub const MAX_CREDENTIALS_CHARS: usize = 4_096;
/// The longest `authentication.scheme` (`Bearer`, `Basic`).
pub const MAX_SCHEME_CHARS: usize = 32;

/// The push configs of tasks, over the hub's store, and the hosts a webhook may name.
pub struct PushConfigs {
    hub: Arc<TaskHub>,
    allowed_hosts: Vec<HostPattern>,
}

impl PushConfigs {
    /// The operations over `hub`, for webhooks on `allowed_hosts` (`push.allowed_hosts`).
    pub fn new(hub: Arc<TaskHub>, allowed_hosts: Vec<HostPattern>) -> PushConfigs {
        PushConfigs { hub, allowed_hosts }
    }

    /// `push.allowed_hosts`, parsed.
    pub fn allowed_hosts(&self) -> &[HostPattern] {
        &self.allowed_hosts
    }

    /// Creates (or, for an id the task has, replaces) a config of the task it names.
    pub async fn create(
        &self,
        caller: &Caller,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, TaskError> {
        let config = checked(config)?;
        self.visible(caller, &config.task_id)?;
        set_on(&self.hub, &config.task_id, config.clone()).await?;
        Ok(config)
    }

    /// The task's config `id`; not found when the task has none by that id.
    pub fn get(
        &self,
        caller: &Caller,
        task_id: &str,
        id: &str,
    ) -> Result<TaskPushNotificationConfig, TaskError> {
        self.visible(caller, task_id)?;
        let json = self.hub.store().push_config(task_id, id)?.ok_or_else(|| {
            TaskError::NotFound(format!("{task_id} has no push notification config {id}"))
        })?;
        Ok(read(&json)?)
    }

    /// Every config of the task, oldest first.
    pub fn list(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, TaskError> {
        self.visible(caller, task_id)?;
        let rows = self.hub.store().push_configs(task_id)?;
        Ok(rows
            .iter()
            .map(|(_, json)| read(json))
            .collect::<Result<_, _>>()?)
    }

    /// Deletes the config and its undelivered pushes. Deleting one that is not there is not
    /// an error (§3.1.10: idempotent).
    pub async fn delete(&self, caller: &Caller, task_id: &str, id: &str) -> Result<(), TaskError> {
        self.visible(caller, task_id)?;
        let (task_id, id) = (task_id.to_string(), id.to_string());
        self.hub
            .store()
            .write_queued(move |tx| tx.delete_push_config(&task_id, &id))
            .await?;
        Ok(())
    }

    fn visible(&self, caller: &Caller, task_id: &str) -> Result<TaskRecord, TaskError> {
        match self.hub.store().task(task_id)? {
            Some(record) if record.is_visible_to(&caller.participant_id) => Ok(record),
            _ => Err(TaskError::NotFound(task_id.to_string())),
        }
    }
}

/// The config as it is kept: fields trimmed and within their caps, an id minted when it has
/// none, the tenant dropped (one tenant is served). `task_id` may still be empty: a config sent
/// with a message for a new task gets its id when the task is created.
pub fn checked(
    mut config: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, TaskError> {
    let invalid = |field: &str, why: String| {
        TaskError::InvalidParams(format!("taskPushNotificationConfig.{field}: {why}"))
    };
    config.tenant.clear();
    config.id = config.id.trim().to_string();
    config.url = config.url.trim().to_string();
    if config.id.is_empty() {
        config.id = new_store_key();
    }
    let capped = |field: &str, value: &str, max: usize| {
        if value.chars().count() > max {
            return Err(invalid(field, format!("longer than {max} characters")));
        }
        Ok(())
    };
    capped("id", &config.id, MAX_CONFIG_ID_CHARS)?;
    capped("url", &config.url, MAX_URL_CHARS)?;
    capped("token", &config.token, MAX_TOKEN_CHARS)?;
    if config.url.is_empty() {
        return Err(invalid(
            "url",
            "required: the webhook to POST each update to".into(),
        ));
    }
    if config.id.chars().any(char::is_control) || config.token.chars().any(char::is_control) {
        return Err(invalid(
            "token",
            "control characters cannot go in a header".into(),
        ));
    }
    if let Some(auth) = &config.authentication {
        let (scheme, credentials) = authentication(auth);
        capped("authentication.scheme", scheme, MAX_SCHEME_CHARS)?;
        capped(
            "authentication.credentials",
            credentials,
            MAX_CREDENTIALS_CHARS,
        )?;
        if !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
        {
            return Err(invalid(
                "authentication.scheme",
                "an HTTP authentication scheme such as Bearer or Basic".into(),
            ));
        }
        if credentials.chars().any(|c| c.is_control() || !c.is_ascii()) {
            return Err(invalid(
                "authentication.credentials",
                "printable ASCII, as an Authorization header carries".into(),
            ));
        }
    }
    Ok(config)
}

/// The [`checked`] config a message that creates a task carries, to be saved with the task. A
/// config sent with a message to a running task is set by the server before the message goes.
pub fn sent_with(
    configuration: Option<SendMessageConfiguration>,
) -> Result<Option<TaskPushNotificationConfig>, TaskError> {
    let config = configuration.and_then(|c| c.task_push_notification_config);
    config.map(checked).transpose()
}

/// The scheme and credentials of an `authentication` object: 1.0's `{scheme, credentials}`,
/// or 0.3's `{schemes: [...], credentials}` (its first scheme). Empty when absent.
pub fn authentication(auth: &serde_json::Value) -> (&str, &str) {
    let scheme = match auth.get("scheme") {
        Some(scheme) => text_of(Some(scheme)),
        None => text_of(auth.get("schemes").and_then(|s| s.get(0))),
    };
    (scheme.trim(), text_of(auth.get("credentials")).trim())
}

fn text_of(value: Option<&serde_json::Value>) -> &str {
    value.and_then(|v| v.as_str()).unwrap_or_default()
}

/// Saves a [`checked`] config for `task_id` in the transaction `tx`: the one a message that
/// creates a task writes it in, so that the task's first status is pushed.
pub fn save(
    tx: &mut Tx<'_>,
    task_id: &str,
    mut config: TaskPushNotificationConfig,
) -> Result<Saved, StoreError> {
    config.task_id = task_id.to_string();
    let json = serde_json::to_string(&config)?;
    tx.save_push_config(task_id, &config.id, &json, MAX_CONFIGS_PER_TASK)
}

/// Sets `config` (already [`checked`]) on the task `task_id`, in a write of its own: a config
/// created for a task, or the one a repeated `SendMessage` carried for the task its first
/// sending made. Whoever calls this has checked that the caller may.
pub async fn set_on(
    hub: &TaskHub,
    task_id: &str,
    config: TaskPushNotificationConfig,
) -> Result<(), TaskError> {
    let id = task_id.to_string();
    match hub
        .store()
        .write_queued(move |tx| save(tx, &id, config))
        .await?
    {
        Saved::Full => Err(full(task_id)),
        Saved::Added | Saved::Replaced => Ok(()),
    }
}

/// The refusal of a config beyond [`MAX_CONFIGS_PER_TASK`].
pub fn full(task_id: &str) -> TaskError {
    TaskError::InvalidParams(format!(
        "taskPushNotificationConfig: task {task_id} already has {MAX_CONFIGS_PER_TASK} push \
         notification configs; delete one first"
    ))
}

fn read(json: &str) -> Result<TaskPushNotificationConfig, StoreError> {
    Ok(serde_json::from_str(json)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            task_id: "t".into(),
            url: url.into(),
            ..TaskPushNotificationConfig::default()
        }
    }

    #[test]
    fn an_id_is_minted_when_absent_and_oversized_fields_are_refused_golden() {
        let minted = checked(config(" http://127.0.0.1:9/hook ")).unwrap();
        assert!(!minted.id.is_empty());
        assert_eq!(minted.url, "http://127.0.0.1:9/hook");
        let mut long = config("http://h:1/");
        long.token = "x".repeat(MAX_TOKEN_CHARS + 1);
        assert_eq!(
            checked(long).unwrap_err().to_string(),
            "taskPushNotificationConfig.token: longer than 512 characters"
        );
        assert_eq!(
            checked(config("")).unwrap_err().to_string(),
            "taskPushNotificationConfig.url: required: the webhook to POST each update to"
        );
    }

    #[test]
    fn authentication_reads_in_its_1_0_and_0_3_shapes() {
        let v10 = serde_json::json!({"scheme": "Bearer", "credentials": "abc"});
        let v03 = serde_json::json!({"schemes": ["Basic"], "credentials": "xyz"});
        assert_eq!(authentication(&v10), ("Bearer", "abc"));
        assert_eq!(authentication(&v03), ("Basic", "xyz"));
        let mut bad = config("http://h:1/");
        bad.authentication = Some(serde_json::json!({"scheme": "Bearer\r\nX-Evil: 1"}));
        assert!(checked(bad).is_err());
    }
}
