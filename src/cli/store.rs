//! `hermes store migrate --to postgres`: copy the SQLite store into an empty PostgreSQL
//! database and verify it (row counts and checksums per table). Stop the daemon first: what it
//! stores after the copy's snapshot is not copied.

use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};

use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum StoreAction {
    /// Copy this home's SQLite store (`$HERMES_HOME/hermes.db`) into an empty PostgreSQL
    /// database, keeping every id, and verify the copy table by table. Then set
    /// `[store] backend = "postgres"` (or `HERMES_DATABASE_URL`) and start the daemon.
    Migrate {
        /// The backend to copy to.
        #[arg(long, value_enum)]
        to: Target,
        /// The PostgreSQL URL; default `store.url` / `HERMES_DATABASE_URL`.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Target {
    Postgres,
}

pub(super) async fn store(config: Config, action: StoreAction) -> ExitCode {
    match action {
        StoreAction::Migrate {
            to: Target::Postgres,
            url,
        } => super::exit_code(migrate(&config, url).await),
    }
}

#[cfg(feature = "postgres")]
async fn migrate(config: &Config, url: Option<String>) -> Result<(), String> {
    let url = url.unwrap_or_else(|| config.store.url.expose().to_owned());
    if url.is_empty() {
        return Err("give the PostgreSQL URL (--url, store.url or HERMES_DATABASE_URL)".into());
    }
    let sqlite = config.database_path();
    if !sqlite.exists() {
        return Err(format!("there is no SQLite store at {}", sqlite.display()));
    }
    let target = crate::store::PgStore::connect(&url, 4)
        .await
        .map_err(|e| e.to_string())?;
    println!("copying {} …", sqlite.display());
    let progress = |table: &str, rows: u64| println!("  {table}: {rows} rows copied");
    let report = target
        .copy_from_sqlite(&sqlite, &progress)
        .await
        .map_err(|e| e.to_string())?;
    println!("verified:");
    for (table, rows, sum) in &report.tables {
        println!("  {table}: {rows} rows, sha256 {sum}");
    }
    println!(
        "done: set [store] backend = \"postgres\" (or HERMES_DATABASE_URL) and start the daemon"
    );
    Ok(())
}

#[cfg(not(feature = "postgres"))]
async fn migrate(_config: &Config, _url: Option<String>) -> Result<(), String> {
    Err("this hermes was built without the `postgres` feature".into())
}
