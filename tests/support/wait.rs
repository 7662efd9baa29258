//! How long tests wait, and the one polling loop they wait with.
//!
//! A wait is an upper bound, not a delay: a passing test never sleeps it out. It is generous so
//! that a loaded machine (two cores, parallel test binaries, a debug build) does not turn into
//! a flaky test.

use std::time::{Duration, Instant};

/// How long a test waits for anything the daemon should do promptly: an answer, a send, a
/// connection, a log line.
pub const WAIT: Duration = Duration::from_secs(30);

/// For what takes longer by design: several retries in a row, a 10 MB message, a server that
/// restarts, a 15 MB attachment.
pub const LONG_WAIT: Duration = Duration::from_secs(60);

/// Polls `check` every 10 ms until it returns `Some`; after `timeout` panics with `what` and
/// the output of `describe`.
pub async fn wait_for<T>(
    timeout: Duration,
    what: &str,
    mut check: impl FnMut() -> Option<T>,
    describe: impl Fn() -> String,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!(
                "timed out after {timeout:?} waiting for {what}\n{}",
                describe()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
