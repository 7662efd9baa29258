//! `Settings` in SQLite: the `settings` table, one row per (scope, name).

use super::Cached;
use async_trait::async_trait;
use hermes_adapter::now_millis;
use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use crate::store::{Result, Settings};

#[async_trait]
impl Settings for SqliteStore {
    async fn setting(&self, scope: &str, name: &str) -> Result<Option<String>> {
        let (scope, name) = (scope.to_owned(), name.to_owned());
        self.call(move |c| {
            Ok(c.one(
                "SELECT value FROM settings WHERE scope = ?1 AND name = ?2",
                params![scope, name],
                |r| r.get(0),
            )
            .optional()?)
        })
        .await
    }

    async fn set_setting(&self, scope: &str, name: &str, value: &str) -> Result<()> {
        let (scope, name, value) = (scope.to_owned(), name.to_owned(), value.to_owned());
        self.call(move |c| {
            c.exec(
                "INSERT INTO settings (scope, name, value, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                params![scope, name, value, now_millis()],
            )?;
            Ok(())
        })
        .await
    }

    async fn increment_setting(&self, scope: &str, name: &str) -> Result<i64> {
        let (scope, name) = (scope.to_owned(), name.to_owned());
        self.call(move |c| {
            let value: String = c.one(
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

    async fn delete_setting(&self, scope: &str, name: &str) -> Result<()> {
        let (scope, name) = (scope.to_owned(), name.to_owned());
        self.call(move |c| {
            c.exec(
                "DELETE FROM settings WHERE scope = ?1 AND name = ?2",
                params![scope, name],
            )?;
            Ok(())
        })
        .await
    }

    async fn settings_in(&self, scope: &str) -> Result<Vec<(String, String)>> {
        let scope = scope.to_owned();
        self.call(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT name, value FROM settings WHERE scope = ?1 ORDER BY name",
            )?;
            let rows = stmt
                .query_map([scope], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
    }
}
