//! `[memory]` and `[skills]`: what the agent keeps between conversations (its memory files,
//! its skills) and how often a background review looks for something worth keeping.

use serde::{Deserialize, Serialize};

/// Long-term memory files.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Characters MEMORY.md (the agent's notes) may hold.
    pub memory_chars: usize,
    /// Characters USER.md (about the user) may hold.
    pub user_chars: usize,
    /// Tool rounds without a `memory` call after which a background review looks for facts
    /// worth remembering (0: never).
    pub review_interval: u32,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            memory_chars: 2200,
            user_chars: 1375,
            review_interval: 10,
        }
    }
}

/// Skills: procedural memory the agent reads and writes.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Tool rounds without a `skill_manage` call after which a background review decides whether
    /// the work is worth a skill (0: never).
    pub review_interval: u32,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        SkillsConfig {
            review_interval: 10,
        }
    }
}
