//! The store suite against a real PostgreSQL (`.ci/postgres` starts one on 127.0.0.1): every
//! case on a database of its own, so that cases run in parallel and never see each other's
//! rows; and what only PostgreSQL has (several processes at once).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::PgStore;
use crate::store::Store;
use crate::store::suite::*;

/// The test server's URL: `HERMES_TEST_POSTGRES_URL`, or the one `.ci/postgres` wrote.
fn server_url() -> String {
    if let Ok(url) = std::env::var("HERMES_TEST_POSTGRES_URL") {
        return url;
    }
    let env = std::fs::read_to_string("/tmp/hermes-postgres/env").unwrap_or_else(|_| {
        panic!("PostgreSQL is not running for the tests: start it with .ci/postgres (as root)")
    });
    env.lines()
        .find_map(|l| l.strip_prefix("HERMES_TEST_POSTGRES_URL="))
        .map(str::to_owned)
        .expect("HERMES_TEST_POSTGRES_URL in /tmp/hermes-postgres/env")
}

/// A new, empty database on the test server, named after this process and a counter.
pub(crate) async fn fresh_url() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let url = server_url();
    let name = format!(
        "hermes_t{}_{}_{}",
        std::process::id(),
        hermes_adapter::now_millis(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| {
            panic!("cannot reach the test PostgreSQL at {url} ({e}): start it with .ci/postgres")
        });
    tokio::spawn(conn);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create a test database");
    let (base, _) = url.rsplit_once('/').expect("a database in the URL");
    format!("{base}/{name}")
}

pub(crate) async fn fresh() -> Store {
    Store::new(
        PgStore::connect(&fresh_url().await, 4)
            .await
            .expect("connect"),
    )
}

store_suite!(fresh().await);

#[tokio::test]
async fn processes_starting_together_migrate_once() {
    // A race shows only sometimes: several rounds, each a new database opened by 8 at once.
    for _ in 0..5 {
        let url = fresh_url().await;
        let opened =
            futures_util::future::join_all((0..8).map(|_| PgStore::connect(&url, 2))).await;
        for store in opened {
            store.expect("every process opens the database");
        }
        let store = PgStore::connect(&url, 2).await.unwrap();
        let c = store.client().await.unwrap();
        let version: i32 = c
            .query_one("SELECT version FROM schema_version", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, super::migrations::latest());
        let rows: i64 = c
            .query_one("SELECT COUNT(*) FROM schema_version", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 1);
    }
}

#[tokio::test]
async fn two_processes_opening_one_session_get_the_same_row() {
    let url = fresh_url().await;
    let a = Store::new(PgStore::connect(&url, 2).await.unwrap());
    let b = Store::new(PgStore::connect(&url, 2).await.unwrap());
    let key = dm("42");
    let (x, y) = tokio::join!(a.session_active(&key), b.session_active(&key));
    assert_eq!(x.unwrap().id, y.unwrap().id);
}

#[tokio::test]
async fn a_bad_url_is_an_open_error_naming_no_password() {
    let err = PgStore::connect("postgres://u:secret-pw@127.0.0.1:1/db", 2)
        .await
        .err()
        .expect("nothing listens on port 1");
    let text = err.to_string();
    assert!(!text.contains("secret-pw"), "{text}");
    assert!(text.contains("cannot open"), "{text}");
}
