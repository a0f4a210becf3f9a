//! Reasoning effort: how hard a task's model should think, as a trusted delegator chose it, and
//! how each provider is told (OpenAI-compatible: the `reasoning_effort` field; Anthropic:
//! extended thinking with a token budget per level; the scripted model: not at all).

use serde::{Deserialize, Serialize};

/// The thinking budget Anthropic gets at `low`: the API's smallest accepted budget.
pub const ANTHROPIC_THINKING_LOW: u32 = 1_024;
/// The thinking budget at `medium`: four times `low`, room for a few steps of working.
pub const ANTHROPIC_THINKING_MEDIUM: u32 = 4_096;
/// The thinking budget at `high`: four times `medium`, for problems worth a long look.
pub const ANTHROPIC_THINKING_HIGH: u32 = 16_384;
/// The smallest `budget_tokens` the Anthropic API accepts; below it thinking is left off.
pub const ANTHROPIC_MIN_THINKING: u32 = 1_024;

/// How hard the model should reason on a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    /// A quick answer: the least thinking the provider offers.
    Low,
    /// Some steps of working before the answer.
    Medium,
    /// The most the provider offers, for problems worth a long look.
    High,
}

impl Effort {
    /// Every level's name, as a brief writes it.
    pub const NAMES: [&'static str; 3] = ["low", "medium", "high"];

    /// The level a brief names (`low`, `medium`, `high`), if it is one.
    pub fn parse(text: &str) -> Option<Effort> {
        match text {
            "low" => Some(Effort::Low),
            "medium" => Some(Effort::Medium),
            "high" => Some(Effort::High),
            _ => None,
        }
    }

    /// The name as written in a brief and in OpenAI's `reasoning_effort`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// The thinking budget Anthropic gets for this level under `max_tokens`: the level's budget
    /// ([`ANTHROPIC_THINKING_LOW`] and so on), cut to half of `max_tokens` so that the answer
    /// keeps at least the other half (the API counts thinking inside `max_tokens` and wants the
    /// budget below it). `None` when that leaves less than the API's minimum: the call is then
    /// made without thinking rather than refused.
    pub fn anthropic_thinking_budget(self, max_tokens: u32) -> Option<u32> {
        let level = match self {
            Effort::Low => ANTHROPIC_THINKING_LOW,
            Effort::Medium => ANTHROPIC_THINKING_MEDIUM,
            Effort::High => ANTHROPIC_THINKING_HIGH,
        };
        let budget = level.min(max_tokens / 2);
        (budget >= ANTHROPIC_MIN_THINKING).then_some(budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_to_the_level_that_writes_it() {
        for name in Effort::NAMES {
            assert_eq!(Effort::parse(name).map(Effort::as_str), Some(name));
        }
        assert_eq!(Effort::parse("HIGH"), None);
        assert_eq!(Effort::parse("extreme"), None);
    }

    #[test]
    fn anthropic_budgets_stay_under_half_of_max_tokens_and_at_the_api_minimum() {
        assert_eq!(Effort::Low.anthropic_thinking_budget(32_768), Some(1_024));
        assert_eq!(
            Effort::Medium.anthropic_thinking_budget(32_768),
            Some(4_096)
        );
        assert_eq!(Effort::High.anthropic_thinking_budget(32_768), Some(16_384));
        assert_eq!(Effort::High.anthropic_thinking_budget(4_096), Some(2_048));
        assert_eq!(Effort::Low.anthropic_thinking_budget(2_048), Some(1_024));
        assert_eq!(Effort::High.anthropic_thinking_budget(2_047), None);
    }
}
