//! `[policy]`: the permission level per platform, the matrix and per-tool overrides, and how
//! long a confirmation or a question waits.

use std::collections::HashMap;

use hermes_adapter::Platform;
use serde::{Deserialize, Serialize};

use crate::policy::{Category, Decision, Level};

/// Who may do what without asking.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Default permission level: `safe`, `auto` or `full-access`.
    pub level: Level,
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
            platforms: HashMap::new(),
            matrix: HashMap::new(),
            tools: HashMap::new(),
            approval_timeout_secs: 30,
            clarify_timeout_secs: 300,
        }
    }
}
