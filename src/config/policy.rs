//! `[policy]`: the permission level per platform, the matrix and per-tool overrides, and how
//! long a confirmation or a question waits.

use std::collections::HashMap;
use std::path::Path;

use hermes_adapter::Platform;
use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::policy::{Category, Decision, Level};

/// Who may do what without asking.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Default permission level: `safe`, `auto` or `full-access`.
    pub level: Level,
    /// Highest level a user may set with `/permissions`; only an operator goes above it.
    pub max_level: Level,
    /// Level per platform (`[policy.platforms] telegram = "safe"`).
    pub platforms: HashMap<Platform, Level>,
    /// Cell overrides (`[policy.matrix.auto] system = "deny"`).
    pub matrix: HashMap<Level, HashMap<Category, Decision>>,
    /// Per-tool overrides at every level (`[policy.tools] terminal = "deny"`).
    pub tools: HashMap<String, Decision>,
    /// Seconds a confirmation waits for the user; no answer is a denial.
    pub approval_timeout_secs: u64,
    /// Seconds `clarify` waits for the user's answer.
    pub clarify_timeout_secs: u64,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            level: Level::Auto,
            max_level: Level::Auto,
            platforms: HashMap::new(),
            matrix: HashMap::new(),
            tools: HashMap::new(),
            approval_timeout_secs: 30,
            clarify_timeout_secs: 300,
        }
    }
}

impl PolicyConfig {
    /// Overrides name built-in tools; confirmations wait at least a second.
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        if let Some(tool) = self
            .tools
            .keys()
            .find(|t| !super::is_builtin(t) && !t.starts_with("mcp_"))
        {
            return bad("policy.tools", format!("unknown tool `{tool}`"));
        }
        if self.approval_timeout_secs == 0 {
            return bad("policy.approval_timeout_secs", "must be at least 1".into());
        }
        Ok(())
    }
}
