//! `[access]`: the operators, the people who run this daemon. They are served everywhere, and
//! only they raise a permission level above `policy.max_level`, move home channels, change
//! shared skills and use admin commands. Each platform's section can name more (`operators`).

use std::path::Path;

use hermes_adapter::Platform;
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The daemon's operators.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccessConfig {
    /// Operators as `platform:id` (`telegram:123`, `email:ops@example.com`,
    /// `matrix:@me:example.org`). Env: `HERMES_OPERATORS` (comma-separated).
    pub operators: Vec<String>,
    /// DM pairing: a stranger who writes to the bot in a direct chat gets a one-time code (no
    /// model call), which an operator approves with `hermes pairing approve <platform> <code>`.
    pub pairing: bool,
}

impl AccessConfig {
    /// Every entry names a chat platform and an id.
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        for entry in &self.operators {
            let ok = entry.split_once(':').is_some_and(|(p, id)| {
                !id.trim().is_empty()
                    && p.parse::<Platform>()
                        .is_ok_and(|p| !matches!(p, Platform::Cli | Platform::Cron))
            });
            if !ok {
                return Err(ConfigError::invalid(
                    file,
                    "access.operators",
                    format!("`{entry}` is not `platform:id` (for example \"telegram:123456\")"),
                ));
            }
        }
        Ok(())
    }

    /// The ids named for `platform`.
    pub fn operators_on(&self, platform: Platform) -> Vec<String> {
        self.operators
            .iter()
            .filter_map(|e| e.split_once(':'))
            .filter(|(p, _)| p.parse::<Platform>() == Ok(platform))
            .map(|(_, id)| id.trim().to_owned())
            .collect()
    }
}
