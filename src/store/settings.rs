//! Named settings per scope: a session key's permission level, todo list and enabled skills, a
//! user's standing tool grants, counters such as skill uses. Values are short text (JSON where
//! structured).

use async_trait::async_trait;
use hermes_adapter::SessionKey;

use super::Result;

/// Scope of a session key's settings (its permission level, todo list, enabled skills).
pub fn key_scope(key: &SessionKey) -> String {
    format!("session:{key}")
}

/// The settings role.
#[async_trait]
pub trait Settings: Send + Sync {
    async fn setting(&self, scope: &str, name: &str) -> Result<Option<String>>;

    async fn set_setting(&self, scope: &str, name: &str, value: &str) -> Result<()>;

    /// Add one to the whole number kept in a setting (missing or not a number counts as 0) and
    /// return the new value, in one statement so that concurrent callers never lose a count.
    async fn increment_setting(&self, scope: &str, name: &str) -> Result<i64>;

    async fn delete_setting(&self, scope: &str, name: &str) -> Result<()>;

    /// Every setting of `scope` as `(name, value)`, by name (small scopes: pairing codes,
    /// approved people).
    async fn settings_in(&self, scope: &str) -> Result<Vec<(String, String)>>;
}
