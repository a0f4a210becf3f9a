//! The models a harness runs tasks on: `[model]`, the default, and each `[models.NAME]`, all
//! built once at start-up. A task runs on the one its trusted creator named, or on the default;
//! a name no entry has is refused wherever it arrives, with the names that would do.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Model;

/// The stable code of an unknown model name, as a tool error gives it.
pub const UNKNOWN_MODEL_CODE: &str = "model.unknown";

/// How much of a refused name is echoed back. The name comes from a model or a peer, so it is
/// escaped and bounded before it goes back to either.
pub const MAX_ECHOED_NAME_CHARS: usize = 64;

/// The default model and the named ones.
#[derive(Clone)]
pub struct Models {
    default: Arc<dyn Model>,
    named: BTreeMap<String, Arc<dyn Model>>,
}

impl Models {
    /// The default model and the named ones, by name.
    pub fn new(default: Arc<dyn Model>, named: BTreeMap<String, Arc<dyn Model>>) -> Models {
        Models { default, named }
    }

    /// `[model]`, which every task without a model of its own runs on.
    pub fn default_model(&self) -> &Arc<dyn Model> {
        &self.default
    }

    /// The names of `[models.*]`, sorted.
    pub fn names(&self) -> Vec<String> {
        self.named.keys().cloned().collect()
    }

    /// The model a task runs on: the named one, or the default when `name` is `None`.
    pub fn resolve(&self, name: Option<&str>) -> Result<&Arc<dyn Model>, UnknownModel> {
        match name {
            None => Ok(&self.default),
            Some(name) => self
                .named
                .get(name)
                .ok_or_else(|| UnknownModel::new(name, self.names())),
        }
    }

    /// Each named model's description, for the start-up log and `harness check`.
    pub fn describe_named(&self) -> Vec<(String, String)> {
        self.named
            .iter()
            .map(|(name, model)| (name.clone(), model.describe()))
            .collect()
    }
}

impl From<Arc<dyn Model>> for Models {
    /// A harness with one model and no named ones.
    fn from(default: Arc<dyn Model>) -> Models {
        Models::new(default, BTreeMap::new())
    }
}

/// A model name no `[models.*]` entry has: `no model named "{name}"; valid models: a, b …`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[{UNKNOWN_MODEL_CODE}] {}", self.message())]
pub struct UnknownModel {
    /// The name as it was sent, cut to [`MAX_ECHOED_NAME_CHARS`].
    pub rejected: String,
    /// Every name that would have been accepted, sorted.
    pub valid: Vec<String>,
}

impl UnknownModel {
    /// The error for `name`, given the valid names.
    pub fn new(name: &str, valid: Vec<String>) -> UnknownModel {
        let rejected = match name.char_indices().nth(MAX_ECHOED_NAME_CHARS) {
            Some((at, _)) => format!("{}…", &name[..at]),
            None => name.to_string(),
        };
        UnknownModel { rejected, valid }
    }

    /// `Ok` when `name` is one of `valid`.
    pub fn check(name: &str, valid: &[String]) -> Result<(), UnknownModel> {
        if valid.iter().any(|v| v == name) {
            Ok(())
        } else {
            Err(UnknownModel::new(name, valid.to_vec()))
        }
    }

    /// The message after the code. The name is escaped as a Rust string literal would be, so a
    /// quote or a line break in it cannot end the quote or start a line.
    pub fn message(&self) -> String {
        let rejected = self.rejected.escape_debug();
        if self.valid.is_empty() {
            format!(
                "no model named \"{rejected}\"; this harness has no named models, so leave model out to use its default"
            )
        } else {
            format!(
                "no model named \"{rejected}\"; valid models: {} (or leave model out for the default)",
                self.valid.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::model::UnconfiguredModel;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones_golden() {
        let err = UnknownModel::new("gpt-9", names(&["deep", "fast"]));
        assert_eq!(
            err.to_string(),
            r#"[model.unknown] no model named "gpt-9"; valid models: deep, fast (or leave model out for the default)"#
        );
        let none = UnknownModel::new("deep", Vec::new());
        assert_eq!(
            none.to_string(),
            r#"[model.unknown] no model named "deep"; this harness has no named models, so leave model out to use its default"#
        );
    }

    #[test]
    fn a_hostile_name_is_escaped_and_cut_before_it_is_echoed() {
        let err = UnknownModel::new("a\"\nvalid models: all", names(&["fast"]));
        assert!(
            err.message()
                .starts_with(r#"no model named "a\"\nvalid models: all";"#)
        );
        let long = UnknownModel::new(&"x".repeat(1_000), Vec::new());
        assert_eq!(long.rejected.chars().count(), MAX_ECHOED_NAME_CHARS + 1);
    }

    #[test]
    fn resolve_gives_the_named_model_or_the_default() {
        let default: Arc<dyn Model> = Arc::new(UnconfiguredModel::new(Some(1)));
        let fast: Arc<dyn Model> = Arc::new(UnconfiguredModel::new(Some(2)));
        let models = Models::new(default, BTreeMap::from([("fast".to_string(), fast)]));
        assert_eq!(models.resolve(None).unwrap().context_window(), Some(1));
        assert_eq!(
            models.resolve(Some("fast")).unwrap().context_window(),
            Some(2)
        );
        let err = models.resolve(Some("slow")).err().unwrap();
        assert_eq!(err.valid, ["fast"]);
        assert_eq!(models.names(), ["fast"]);
        assert!(UnknownModel::check("fast", &models.names()).is_ok());
    }
}
