//! Named settings per scope: a session key's permission level and todo list, a user's standing
//! tool grants. Values are short text (JSON where structured).

use hermes_adapter::{SessionKey, now_millis};
use rusqlite::{OptionalExtension, params};

use super::{Result, Store};

/// Scope of a session key's settings (its permission level, todo list, enabled skills).
pub fn key_scope(key: &SessionKey) -> String {
    format!("session:{key}")
}

impl Store {
    pub async fn setting(&self, scope: &str, name: &str) -> Result<Option<String>> {
        let (scope, name) = (scope.to_owned(), name.to_owned());
        self.call(move |c| {
            Ok(c.query_row(
                "SELECT value FROM settings WHERE scope = ?1 AND name = ?2",
                params![scope, name],
                |r| r.get(0),
            )
            .optional()?)
        })
        .await
    }

    pub async fn set_setting(&self, scope: &str, name: &str, value: &str) -> Result<()> {
        let (scope, name, value) = (scope.to_owned(), name.to_owned(), value.to_owned());
        self.call(move |c| {
            c.execute(
                "INSERT INTO settings (scope, name, value, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                params![scope, name, value, now_millis()],
            )?;
            Ok(())
        })
        .await
    }

    /// Add one to the whole number kept in a setting (missing or not a number counts as 0) and
    /// return the new value, in one statement so that concurrent callers never lose a count.
    pub async fn increment_setting(&self, scope: &str, name: &str) -> Result<i64> {
        let (scope, name) = (scope.to_owned(), name.to_owned());
        self.call(move |c| {
            let value: String = c.query_row(
                "INSERT INTO settings (scope, name, value, updated_at) VALUES (?1, ?2, '1', ?3)
                 ON CONFLICT (scope, name) DO UPDATE
                 SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT), updated_at = excluded.updated_at
                 RETURNING value",
                params![scope, name, now_millis()],
                |r| r.get(0),
            )?;
            value
                .parse()
                .map_err(|_| super::StoreError::Corrupt(format!("counter `{value}`")))
        })
        .await
    }

    pub async fn delete_setting(&self, scope: &str, name: &str) -> Result<()> {
        let (scope, name) = (scope.to_owned(), name.to_owned());
        self.call(move |c| {
            c.execute(
                "DELETE FROM settings WHERE scope = ?1 AND name = ?2",
                params![scope, name],
            )?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn settings_are_set_replaced_and_deleted() {
        let store = Store::open_in_memory().unwrap();
        assert_eq!(store.setting("s", "level").await.unwrap(), None);
        store.set_setting("s", "level", "safe").await.unwrap();
        store.set_setting("s", "level", "auto").await.unwrap();
        store
            .set_setting("t", "level", "full-access")
            .await
            .unwrap();
        assert_eq!(
            store.setting("s", "level").await.unwrap().as_deref(),
            Some("auto")
        );
        store.delete_setting("s", "level").await.unwrap();
        assert_eq!(store.setting("s", "level").await.unwrap(), None);
        assert_eq!(
            store.setting("t", "level").await.unwrap().as_deref(),
            Some("full-access")
        );
    }

    #[tokio::test]
    async fn counters_start_at_one_and_count_up() {
        let store = Store::open_in_memory().unwrap();
        assert_eq!(store.increment_setting("s", "uses").await.unwrap(), 1);
        assert_eq!(store.increment_setting("s", "uses").await.unwrap(), 2);
        store.set_setting("s", "junk", "x").await.unwrap();
        assert_eq!(store.increment_setting("s", "junk").await.unwrap(), 1);
        assert_eq!(
            store.setting("s", "uses").await.unwrap().as_deref(),
            Some("2")
        );
    }
}
