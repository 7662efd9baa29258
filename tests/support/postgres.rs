//! The test PostgreSQL server (`.ci/postgres`): a new, empty database per test.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The server's URL: `HERMES_TEST_POSTGRES_URL`, or the one `.ci/postgres` wrote.
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

/// A connection to the server's maintenance database.
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| {
            panic!("cannot reach the test PostgreSQL at {url} ({e}): start it with .ci/postgres")
        });
    tokio::spawn(conn);
    client
}

/// The URL of a new, empty database.
pub async fn fresh_database() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let url = server_url();
    let name = format!(
        "hermes_it{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let admin = connect(&url).await;
    // Two statements: neither may run inside a transaction block.
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin
            .batch_execute(&sql)
            .await
            .expect("create a test database");
    }
    let (base, _) = url.rsplit_once('/').expect("a database in the URL");
    format!("{base}/{name}")
}

/// A PostgreSQL server of one test's own (`.ci/postgres` on another data directory and port),
/// for what the shared one must not do under other tests' feet: restart. Stopped when dropped.
pub struct PrivateServer {
    data: std::path::PathBuf,
    pub url: String,
}

impl PrivateServer {
    /// Start a new server on `port` (initdb and start: a few seconds).
    pub fn start(port: u16) -> PrivateServer {
        let data = std::path::PathBuf::from(format!("/tmp/hermes-postgres-{port}"));
        let server = PrivateServer {
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            data,
        };
        server.script(&["start", &server.data.to_string_lossy(), &port.to_string()]);
        server
    }

    /// Restart it (a fast shutdown: every client connection is cut), keeping its data.
    pub fn restart(&self) {
        self.script(&["restart", &self.data.to_string_lossy()]);
    }

    fn script(&self, args: &[&str]) {
        let out = std::process::Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/postgres"))
            .args(args)
            .output()
            .expect("run .ci/postgres");
        assert!(
            out.status.success(),
            ".ci/postgres {args:?} failed (it runs as root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/postgres"))
            .args(["stop", &self.data.to_string_lossy()])
            .output();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}
