//! A session's permission level and standing grants, read at the start of a turn and updated
//! when the user answers "allow for this session" or "always".
//!
//! Where they live (store settings): the level under the session key (it survives `/new`), the
//! session grants under the session id (they end with the session), the standing grants under
//! the user (`user:<platform>:<id>`).

use std::collections::BTreeSet;

use hermes_adapter::{SessionKey, UserId};

use crate::policy::{Answer, Level};
use crate::store::{Result, Settings, key_scope};

const LEVEL: &str = "permission_level";
const GRANTS: &str = "grants";

/// The level set for `key` with `/permissions`, if any.
pub async fn stored_level(store: &dyn Settings, key: &SessionKey) -> Result<Option<Level>> {
    Ok(store
        .setting(&key_scope(key), LEVEL)
        .await?
        .and_then(|v| Level::parse(&v)))
}

/// Set (or with `None`, reset to the default) the level of `key`.
pub async fn set_level(store: &dyn Settings, key: &SessionKey, level: Option<Level>) -> Result<()> {
    match level {
        Some(l) => store.set_setting(&key_scope(key), LEVEL, l.as_str()).await,
        None => store.delete_setting(&key_scope(key), LEVEL).await,
    }
}

/// The permission state a turn runs under.
#[derive(Debug, Clone)]
pub struct Permissions {
    pub level: Level,
    session_scope: Option<String>,
    user_scope: Option<String>,
    session_grants: BTreeSet<String>,
    user_grants: BTreeSet<String>,
}

async fn grants(store: &dyn Settings, scope: &Option<String>) -> Result<BTreeSet<String>> {
    let Some(scope) = scope else {
        return Ok(BTreeSet::new());
    };
    Ok(store
        .setting(scope, GRANTS)
        .await?
        .and_then(|v| serde_json::from_str(&v).ok())
        .unwrap_or_default())
}

impl Permissions {
    /// Nothing granted, nobody to remember answers for (subagents).
    pub fn fixed(level: Level) -> Self {
        Permissions {
            level,
            session_scope: None,
            user_scope: None,
            session_grants: BTreeSet::new(),
            user_grants: BTreeSet::new(),
        }
    }

    /// Load the state of a session for a turn asked by `requester`. Grants are the requester's
    /// own, in this session ("allow for this session") or standing ("always"): in a shared
    /// session one member's grant never covers another, and a turn nobody asked (a scheduled
    /// run) has none at all.
    pub async fn load(
        store: &dyn Settings,
        default: Level,
        key: &SessionKey,
        session_id: i64,
        requester: Option<&UserId>,
    ) -> Result<Self> {
        let level = stored_level(store, key).await?.unwrap_or(default);
        let session_scope = requester.map(|u| format!("sid:{session_id}:{u}"));
        let user_scope = requester.map(|u| format!("user:{}:{u}", key.platform));
        Ok(Permissions {
            level,
            session_grants: grants(store, &session_scope).await?,
            user_grants: grants(store, &user_scope).await?,
            session_scope,
            user_scope,
        })
    }

    /// Whether the user allowed `tool` for this session or always.
    pub fn granted(&self, tool: &str) -> bool {
        self.session_grants.contains(tool) || self.user_grants.contains(tool)
    }

    /// Remember a "for this session" or "always" answer.
    pub async fn remember(
        &mut self,
        store: &dyn Settings,
        tool: &str,
        answer: Answer,
    ) -> Result<()> {
        let (set, scope) = match answer {
            Answer::Session => (&mut self.session_grants, &self.session_scope),
            Answer::Always => (&mut self.user_grants, &self.user_scope),
            Answer::Once | Answer::Deny => return Ok(()),
        };
        let Some(scope) = scope else { return Ok(()) };
        if set.insert(tool.to_owned()) {
            let value = serde_json::to_string(&*set).unwrap_or_else(|_| "[]".into());
            store.set_setting(scope, GRANTS, &value).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use hermes_adapter::Platform;

    use super::*;

    #[tokio::test]
    async fn grants_persist_in_their_scopes() {
        let store = crate::store::Store::open_in_memory().unwrap();
        let key = SessionKey::direct(Platform::Telegram, "5");
        let user: UserId = "5".into();
        let mut p = Permissions::load(&*store, Level::Auto, &key, 1, Some(&user))
            .await
            .unwrap();
        assert!(!p.granted("terminal"));
        p.remember(&*store, "terminal", Answer::Session)
            .await
            .unwrap();
        p.remember(&*store, "web_fetch", Answer::Always)
            .await
            .unwrap();
        let same = Permissions::load(&*store, Level::Auto, &key, 1, Some(&user))
            .await
            .unwrap();
        assert!(same.granted("terminal") && same.granted("web_fetch"));
        // A new session keeps the standing grant, not the session one.
        let next = Permissions::load(&*store, Level::Auto, &key, 2, Some(&user))
            .await
            .unwrap();
        assert!(!next.granted("terminal") && next.granted("web_fetch"));
        // Another member of the same session has neither; nor has a turn nobody asked.
        let other: UserId = "6".into();
        let theirs = Permissions::load(&*store, Level::Auto, &key, 1, Some(&other))
            .await
            .unwrap();
        assert!(!theirs.granted("terminal") && !theirs.granted("web_fetch"));
        let unattended = Permissions::load(&*store, Level::Auto, &key, 1, None)
            .await
            .unwrap();
        assert!(!unattended.granted("terminal") && !unattended.granted("web_fetch"));
    }

    #[tokio::test]
    async fn the_stored_level_wins_over_the_default() {
        let store = crate::store::Store::open_in_memory().unwrap();
        let key = SessionKey::direct(Platform::Telegram, "5");
        set_level(&*store, &key, Some(Level::Safe)).await.unwrap();
        let p = Permissions::load(&*store, Level::FullAccess, &key, 1, None)
            .await
            .unwrap();
        assert_eq!(p.level, Level::Safe);
        set_level(&*store, &key, None).await.unwrap();
        let p = Permissions::load(&*store, Level::FullAccess, &key, 1, None)
            .await
            .unwrap();
        assert_eq!(p.level, Level::FullAccess);
    }
}
