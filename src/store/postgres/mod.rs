//! The PostgreSQL backend: the same roles as SQLite on a shared database, so that several
//! gateway processes (on one machine or many) serve one set of conversations. A pool of
//! connections (deadpool-postgres over tokio-postgres, natively async: nothing blocks the
//! runtime); each role's file holds its SQL. The schema is created by numbered migrations under
//! an advisory lock, so processes starting together migrate once.

mod copy;
pub use copy::CopyReport;
mod cron;
mod inbox;
#[cfg(test)]
mod lease_tests;
mod leases;
mod listen;
mod migrations;
mod outbox;
mod retention;
mod search;
mod sessions;
mod settings;
#[cfg(test)]
mod tests;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use super::{Result, StoreError};

/// Handle to the pool. Cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// Where to open the connection that listens for notifications (outside the pool).
    config: std::sync::Arc<tokio_postgres::Config>,
}

/// A pooled connection.
type Client = deadpool_postgres::Object;

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        // The server's message and SQLSTATE, never the connection string.
        match e.as_db_error() {
            Some(db) => StoreError::Postgres(format!("{} ({})", db.message(), db.code().code())),
            None => StoreError::Postgres(e.to_string()),
        }
    }
}

impl PgStore {
    /// Connect to `url` (`postgres://user:password@host:port/database`) with at most
    /// `pool_size` connections and bring the schema up to date.
    pub async fn connect(url: &str, pool_size: usize) -> Result<PgStore> {
        let config: tokio_postgres::Config = url.parse().map_err(|e| StoreError::Open {
            path: "(postgres url)".into(),
            reason: format!("not a PostgreSQL URL: {e}"),
        })?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(2))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Open {
                path: "(postgres pool)".into(),
                reason: e.to_string(),
            })?;
        let store = PgStore {
            pool,
            config: std::sync::Arc::new(config),
        };
        let mut client = store.client().await.map_err(|e| StoreError::Open {
            path: "(postgres)".into(),
            reason: e.to_string(),
        })?;
        migrations::apply(&mut client).await?;
        Ok(store)
    }

    /// A connection from the pool (waits while all are busy).
    async fn client(&self) -> Result<Client> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::Postgres(format!("no database connection: {e}")))
    }
}
