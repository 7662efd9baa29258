//! `Settings` in PostgreSQL: the `settings` table, one row per (scope, name).

use async_trait::async_trait;
use hermes_adapter::now_millis;

use super::PgStore;
use crate::store::{Result, Settings, StoreError};

#[async_trait]
impl Settings for PgStore {
    async fn setting(&self, scope: &str, name: &str) -> Result<Option<String>> {
        let c = self.client().await?;
        let row = c
            .query_opt(
                "SELECT value FROM settings WHERE scope = $1 AND name = $2",
                &[&scope, &name],
            )
            .await?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn set_setting(&self, scope: &str, name: &str, value: &str) -> Result<()> {
        let c = self.client().await?;
        c.execute(
            "INSERT INTO settings (scope, name, value, updated_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (scope, name) DO UPDATE
             SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at",
            &[&scope, &name, &value, &now_millis()],
        )
        .await?;
        Ok(())
    }

    async fn increment_setting(&self, scope: &str, name: &str) -> Result<i64> {
        let c = self.client().await?;
        // One statement: concurrent callers (of any process) never lose a count. A value that
        // is not a number counts as 0, as in SQLite.
        let value: String = c
            .query_one(
                "INSERT INTO settings (scope, name, value, updated_at) VALUES ($1, $2, '1', $3)
                 ON CONFLICT (scope, name) DO UPDATE
                 SET value = (CASE WHEN settings.value ~ '^-?[0-9]{1,18}$'
                                   THEN settings.value::BIGINT ELSE 0 END + 1)::TEXT,
                     updated_at = EXCLUDED.updated_at
                 RETURNING value",
                &[&scope, &name, &now_millis()],
            )
            .await?
            .get(0);
        value
            .parse()
            .map_err(|_| StoreError::Corrupt(format!("counter `{value}`")))
    }

    async fn delete_setting(&self, scope: &str, name: &str) -> Result<()> {
        let c = self.client().await?;
        c.execute(
            "DELETE FROM settings WHERE scope = $1 AND name = $2",
            &[&scope, &name],
        )
        .await?;
        Ok(())
    }

    async fn settings_in(&self, scope: &str) -> Result<Vec<(String, String)>> {
        let c = self.client().await?;
        let rows = c
            .query(
                "SELECT name, value FROM settings WHERE scope = $1 ORDER BY name",
                &[&scope],
            )
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
