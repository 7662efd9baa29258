//! `[agent]`: the turn loop's budgets, its history and compression, the system prompt and the
//! user's time zone.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The agent's turn loop.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Model calls per turn before the agent stops and says so.
    pub max_iterations: u32,
    /// Most recent messages of a session sent to the model.
    pub history_messages: usize,
    /// Characters of one tool result kept for the model; the rest is cut with a note.
    pub tool_output_max_chars: usize,
    /// Extra instructions appended to the built-in system prompt.
    pub system_prompt: Option<String>,
    /// IANA time zone the agent assumes for the user (`current_time` default). Unset: the
    /// system's zone.
    pub timezone: Option<String>,
    /// Tokens (prompt + completion, all model calls) one turn may spend before it stops.
    pub max_turn_tokens: u64,
    /// Wall-clock limit of one turn, in seconds.
    pub max_turn_secs: u64,
    /// While a turn runs longer than this, the user gets a short "still working" note this
    /// often (0: never).
    pub progress_notice_secs: u64,
    /// Fraction of `llm.context_window` a prompt may fill before the history is compressed.
    pub compression_threshold: f64,
    /// Messages at the start of a session kept verbatim when compressing.
    pub compression_keep_first: usize,
    /// Most recent messages kept verbatim when compressing.
    pub compression_keep_last: usize,
    /// The profile (`[profiles.<name>]`) of sessions nothing else picks one for.
    pub default_profile: Option<String>,
    /// Profiles by platform (`telegram = "analyst"`) or by chat (`"slack:C0123" = "ops"`; a
    /// direct chat by the person's id, `"telegram:8123456"`).
    pub profile_routes: std::collections::BTreeMap<String, String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_iterations: 90,
            history_messages: 200,
            tool_output_max_chars: 16_000,
            system_prompt: None,
            timezone: None,
            max_turn_tokens: 2_000_000,
            max_turn_secs: 1800,
            progress_notice_secs: 120,
            compression_threshold: 0.5,
            compression_keep_first: 3,
            compression_keep_last: 20,
            default_profile: None,
            profile_routes: Default::default(),
        }
    }
}

impl AgentConfig {
    /// Budgets above zero, a threshold in range, a known time zone.
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        if self.max_iterations == 0 {
            return bad("agent.max_iterations", "must be at least 1".into());
        }
        if !(0.1..=0.95).contains(&self.compression_threshold) {
            return bad(
                "agent.compression_threshold",
                "must be between 0.1 and 0.95".into(),
            );
        }
        if self.history_messages < 2 {
            return bad("agent.history_messages", "must be at least 2".into());
        }
        if let Some(tz) = &self.timezone
            && jiff::tz::TimeZone::get(tz).is_err()
        {
            return bad(
                "agent.timezone",
                format!("unknown time zone `{tz}` (use an IANA name such as \"Europe/Berlin\")"),
            );
        }
        Ok(())
    }
}
