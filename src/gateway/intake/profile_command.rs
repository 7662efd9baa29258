//! `/profile [name]`: show the chat's agent profile and the others, or switch to one (an
//! operator's command in a shared conversation). A switch starts a new conversation, so that a
//! session's system prompt stays the same from its first turn to its last.

use std::sync::Arc;

use hermes_adapter::SessionKey;

use super::stop::stop_session;
use crate::agent::PROFILE_SETTING;
use crate::config::AgentMode;
use crate::gateway::Shared;
use crate::policy::{OPERATORS_ONLY, Role};
use crate::store::key_scope;

pub(crate) async fn profile(
    shared: &Arc<Shared>,
    key: &SessionKey,
    role: Role,
    arg: &str,
) -> String {
    let config = shared.config();
    if config.profiles.is_empty() {
        return "No agent profiles are configured ([profiles.<name>] in the configuration)."
            .to_owned();
    }
    let current = match shared.agent().profile_of(key).await {
        Ok(p) => p.map(|(n, _)| n.to_owned()),
        Err(e) => return format!("⚠️ {e}"),
    };
    let arg = arg.trim();
    if !arg.is_empty() {
        if key.is_shared() && !role.is_operator() {
            return format!(
                "{OPERATORS_ONLY} This conversation is shared: its profile applies to everyone in it."
            );
        }
        let scope = key_scope(key);
        let stored = match arg.to_lowercase().as_str() {
            "default" | "reset" => shared.store.delete_setting(&scope, PROFILE_SETTING).await,
            name if config.profiles.contains_key(name) => {
                shared
                    .store
                    .set_setting(&scope, PROFILE_SETTING, name)
                    .await
            }
            _ => {
                return format!(
                    "Unknown profile `{arg}`. {}",
                    listing(&config, current.as_deref())
                );
            }
        };
        if let Err(e) = stored {
            tracing::error!(error = %e, "cannot store a profile choice");
            return "⚠️ I could not switch the profile (storage error).".into();
        }
        let stopped = stop_session(shared, key).await;
        if let Err(e) = shared.store.session_reset(key, "profile switched").await {
            tracing::error!(error = %e, "cannot reset a session after a profile switch");
        }
        let name = match shared.agent().profile_of(key).await {
            Ok(Some((n, _))) => n.to_owned(),
            _ => "(none)".to_owned(),
        };
        return format!(
            "🎭 Profile: {name}. A new conversation starts with it; the earlier one stays searchable.{}",
            stopped.note()
        );
    }
    listing(&config, current.as_deref())
}

/// The profiles, the current one marked, and how to switch.
fn listing(config: &crate::config::Config, current: Option<&str>) -> String {
    let mut out = match current {
        Some(name) => format!("Profile: {name}.\n"),
        None => "No profile: the configuration's own model, prompt and tools.\n".to_owned(),
    };
    out.push_str("Profiles:");
    for (name, p) in &config.profiles {
        let mark = if Some(name.as_str()) == current {
            "▸"
        } else {
            "•"
        };
        let model = p.model.as_deref().unwrap_or(&config.llm.model);
        let plan = if p.mode == AgentMode::Plan {
            ", plans first"
        } else {
            ""
        };
        out.push_str(&format!("\n{mark} {name} ({model}{plan})"));
        if !p.description.is_empty() {
            out.push_str(&format!(" — {}", p.description));
        }
    }
    out.push_str("\nSwitch with /profile <name>, or /profile default.");
    out
}
