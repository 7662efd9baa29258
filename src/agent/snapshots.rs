//! What a session's system prompt freezes at its first turn: the memory files and the skills
//! index. Both are stored with the session, so the prompt prefix is byte-identical for all its
//! turns (and across restarts); changes show in the next session.

use hermes_adapter::SessionKey;

use super::Agent;
use crate::skills::{Availability, SkillLibrary, SkillSources};
use crate::store::key_scope;
use crate::store::{SessionRow, Settings, StoreError};

/// The skills a session key is restricted to (`/skills only …`), if any.
pub async fn enabled_skills(
    store: &dyn Settings,
    key: &SessionKey,
) -> Result<Option<Vec<String>>, StoreError> {
    Ok(store
        .setting(&key_scope(key), "skills_enabled")
        .await?
        .and_then(|v| serde_json::from_str(&v).ok()))
}

/// Restrict a session key to `skills` (`None`: all available skills).
pub async fn set_enabled_skills(
    store: &dyn Settings,
    key: &SessionKey,
    skills: Option<&[String]>,
) -> Result<(), StoreError> {
    match skills {
        Some(list) => {
            let json = serde_json::to_string(list).unwrap_or_else(|_| "[]".into());
            store
                .set_setting(&key_scope(key), "skills_enabled", &json)
                .await
        }
        None => {
            store
                .delete_setting(&key_scope(key), "skills_enabled")
                .await
        }
    }
}

/// The setting (in a session's scope) holding the names of the MCP tools it took.
const MCP_TOOLS: &str = "mcp_tools";

impl Agent {
    /// The frozen part of a session's system prompt: skills index and memory.
    /// The tools a run of `session` knows: the agent's, plus the MCP tools the session took at
    /// its first turn once the servers had settled (their names join `enabled`). Until every
    /// server has connected or failed once, a session takes what there is without keeping it.
    pub(crate) async fn session_tools(
        &self,
        session: &SessionRow,
        enabled: &mut Vec<&'static str>,
    ) -> Result<std::borrow::Cow<'_, crate::tools::ToolRegistry>, StoreError> {
        let Some(hub) = self.mcp.as_ref().filter(|h| !h.is_empty()) else {
            return Ok(std::borrow::Cow::Borrowed(&self.tools));
        };
        let scope = format!("sid:{}", session.id);
        let names: Vec<String> = match self.store.setting(&scope, MCP_TOOLS).await? {
            Some(frozen) => serde_json::from_str(&frozen).unwrap_or_default(),
            None => {
                let current: Vec<String> = hub.current().iter().map(|n| n.to_string()).collect();
                if hub.settled() {
                    let text = serde_json::to_string(&current).unwrap_or_else(|_| "[]".into());
                    self.store.set_setting(&scope, MCP_TOOLS, &text).await?;
                }
                current
            }
        };
        if names.is_empty() {
            return Ok(std::borrow::Cow::Borrowed(&self.tools));
        }
        let mut registry = self.tools.clone();
        for name in names {
            if registry.get(&name).is_some() {
                continue;
            }
            if let Some(tool) = hub.tool(&name) {
                enabled.push(tool.spec().name);
                registry.register(tool);
            }
        }
        Ok(std::borrow::Cow::Owned(registry))
    }

    pub(crate) async fn frozen_context(
        &self,
        session: &SessionRow,
        enabled: &[&str],
    ) -> Result<Option<String>, StoreError> {
        let skills = if enabled.contains(&"skill_view") {
            self.skills_snapshot(session).await?
        } else {
            None
        };
        let memory = self.memory_snapshot(session).await?;
        let parts: Vec<String> = [skills, memory]
            .into_iter()
            .flatten()
            .filter(|p| !p.trim().is_empty())
            .collect();
        Ok((!parts.is_empty()).then(|| parts.join("\n")))
    }

    /// The skills index of a session, taken at its first turn: the skills available on its
    /// platform with its tools, narrowed by `/skills only`, plus the guidance to save and patch.
    async fn skills_snapshot(&self, session: &SessionRow) -> Result<Option<String>, StoreError> {
        let scope = format!("sid:{}", session.id);
        if let Some(frozen) = self.store.setting(&scope, "skills_index").await? {
            return Ok(Some(frozen).filter(|s| !s.is_empty()));
        }
        let only = enabled_skills(&*self.store, &session.key).await?;
        let platform = session.key.platform;
        let toolsets = self.config.toolsets(platform).to_vec();
        let sources = SkillSources::for_home(&self.config.home);
        let index = tokio::task::spawn_blocking(move || {
            let library = SkillLibrary::load(&sources);
            let ctx = Availability::new(
                platform,
                crate::config::tools_in(&toolsets),
                toolsets.iter(),
            );
            let mut available = library.available(&ctx);
            if let Some(only) = &only {
                available.retain(|s| only.contains(&s.name));
            }
            let index = crate::skills::index(&available);
            format!("{index}\n{}\n", crate::skills::GUIDANCE)
        })
        .await
        .unwrap_or_default();
        self.store
            .set_setting(&scope, "skills_index", &index)
            .await?;
        Ok(Some(index).filter(|s| !s.trim().is_empty()))
    }
    /// The memory snapshot of a session: taken from the owner's memory files at the session's
    /// first turn and kept for the session, so the system prompt stays byte-identical across
    /// its turns (memory edits show from the next session on).
    async fn memory_snapshot(&self, session: &SessionRow) -> Result<Option<String>, StoreError> {
        let scope = format!("sid:{}", session.id);
        if let Some(frozen) = self.store.setting(&scope, "memory_snapshot").await? {
            return Ok(Some(frozen).filter(|s| !s.is_empty()));
        }
        let files = self.memory.clone();
        let owner = session.key.owner();
        let snapshot = tokio::task::spawn_blocking(move || files.snapshot(&owner))
            .await
            .ok()
            .and_then(|r| {
                r.map_err(|e| tracing::warn!(error = %e, "cannot read the memory files"))
                    .ok()
            })
            .flatten();
        self.store
            .set_setting(&scope, "memory_snapshot", snapshot.as_deref().unwrap_or(""))
            .await?;
        Ok(snapshot)
    }
}
