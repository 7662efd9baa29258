//! `[profiles.<name>]`: named agent profiles (the design's switchable engines): a model, a
//! system prompt, toolsets, skills, a permission level and a mode, chosen per platform or per
//! chat (`agent.default_profile`, `[agent.profile_routes]`) or by `/profile` in the chat.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hermes_adapter::{SessionKey, SessionScope};
use serde::{Deserialize, Serialize};

use super::{Config, ConfigError, TOOLSETS};
use crate::policy::Level;

/// How the agent works through a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentMode {
    /// Answer, using tools as the level allows.
    #[default]
    Normal,
    /// First a numbered plan with read-only tools; nothing that writes runs until the person
    /// approves it (`/plan` does this for one request).
    Plan,
}

/// One profile. Unset fields keep the configuration's own (`llm.model`, `agent.system_prompt`,
/// `tools.toolsets`, every skill, the platform's level).
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Profile {
    /// One line shown by `/profile`.
    pub description: String,
    pub model: Option<String>,
    /// Instructions appended to the built-in system prompt (instead of `agent.system_prompt`).
    pub system_prompt: Option<String>,
    /// A file holding them (relative to the configuration file's directory); read at load.
    pub system_prompt_file: Option<PathBuf>,
    /// Toolsets instead of `tools.toolsets` / `tools.platforms`.
    pub toolsets: Option<Vec<String>>,
    /// Only these skills are offered.
    pub skills: Option<Vec<String>>,
    /// The level sessions of this profile start with (still capped by `policy.max_level`).
    pub level: Option<Level>,
    pub mode: AgentMode,
}

impl Config {
    /// The profile a session runs with: the one chosen in the chat (`chosen`, from `/profile`),
    /// else the route of its chat, else of its platform, else `agent.default_profile`.
    pub fn profile_for<'a>(
        &'a self,
        key: &SessionKey,
        chosen: Option<&str>,
    ) -> Option<(&'a str, &'a Profile)> {
        let routes = &self.agent.profile_routes;
        let platform = key.platform.to_string();
        let chat = match &key.scope {
            SessionScope::Direct { user, .. } => user.to_string(),
            SessionScope::Group { chat, .. } => chat.to_string(),
        };
        let name = chosen
            .filter(|c| self.profiles.contains_key(*c))
            .map(str::to_owned)
            .or_else(|| routes.get(&format!("{platform}:{chat}")).cloned())
            .or_else(|| routes.get(&platform).cloned())
            .or_else(|| self.agent.default_profile.clone())?;
        self.profiles
            .get_key_value(&name)
            .map(|(n, p)| (n.as_str(), p))
    }

    /// Read every profile's `system_prompt_file` into its `system_prompt`.
    pub(super) fn read_profile_prompts(&mut self) -> Result<(), ConfigError> {
        let file = self.source.clone();
        let base: PathBuf = file
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.home.clone());
        for (name, profile) in &mut self.profiles {
            let Some(path) = &profile.system_prompt_file else {
                continue;
            };
            if profile.system_prompt.is_some() {
                return Err(ConfigError::invalid(
                    file.as_deref(),
                    &format!("profiles.{name}"),
                    "set system_prompt or system_prompt_file, not both".into(),
                ));
            }
            let path = base.join(path);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                ConfigError::invalid(
                    file.as_deref(),
                    &format!("profiles.{name}.system_prompt_file"),
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            profile.system_prompt = Some(text);
        }
        Ok(())
    }

    /// Names, toolsets and the references to profiles are valid.
    pub(super) fn validate_profiles(&self) -> Result<(), ConfigError> {
        let file = self.source.as_deref();
        let bad = |key: String, problem: String| Err(ConfigError::invalid(file, &key, problem));
        for (name, p) in &self.profiles {
            let valid = !name.is_empty()
                && name.len() <= 40
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
            if !valid {
                return bad(
                    format!("profiles.{name}"),
                    "a profile name is 1-40 characters of a-z, 0-9, - and _".into(),
                );
            }
            for set in p.toolsets.iter().flatten() {
                if !TOOLSETS.iter().any(|(n, _)| n == set) {
                    return bad(
                        format!("profiles.{name}.toolsets"),
                        format!("unknown toolset `{set}`"),
                    );
                }
            }
        }
        let known = |n: &String| self.profiles.contains_key(n);
        if let Some(d) = &self.agent.default_profile
            && !known(d)
        {
            return bad(
                "agent.default_profile".into(),
                format!("no profile `{d}` (define [profiles.{d}])"),
            );
        }
        if let Some((route, n)) = self.agent.profile_routes.iter().find(|(_, n)| !known(n)) {
            return bad(
                format!("agent.profile_routes.{route}"),
                format!("no profile `{n}` (define [profiles.{n}])"),
            );
        }
        Ok(())
    }
}

/// The profiles, by name.
pub type Profiles = BTreeMap<String, Profile>;
