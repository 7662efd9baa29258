//! `Leases` for SQLite: a SQLite store serves one process, which holds every lease; nothing is
//! fenced (there is nobody to fence out).

use async_trait::async_trait;

use super::SqliteStore;
use crate::store::{Beat, Leases, ProcessInfo, ProcessRow, Result, StoreError};

#[async_trait]
impl Leases for SqliteStore {
    fn shared(&self) -> bool {
        false
    }

    async fn process_beat(&self, _me: &ProcessInfo, _ttl_ms: i64) -> Result<Beat> {
        Ok(Beat { lapsed: false })
    }

    async fn process_leave(&self, _me: &str) -> Result<()> {
        Ok(())
    }

    async fn lease_take(&self, _name: &str, _me: &str) -> Result<Option<i64>> {
        Ok(Some(0))
    }

    async fn lease_held(&self, _name: &str, _me: &str, _token: i64) -> Result<bool> {
        Ok(true)
    }

    async fn lease_release(&self, _name: &str, _me: &str, _token: i64) -> Result<()> {
        Ok(())
    }

    async fn lease_holder(&self, _name: &str) -> Result<Option<String>> {
        Ok(None)
    }

    async fn inbox_hand(&self, _id: i64, _to: &str) -> Result<()> {
        // Never asked: with no other holder there is nobody to hand a row to.
        Err(StoreError::Commit(
            "a SQLite store serves one process: there is no other to hand a message to".into(),
        ))
    }

    async fn deployment(&self, _recent_ms: i64) -> Result<Vec<ProcessRow>> {
        Ok(Vec::new())
    }
}
