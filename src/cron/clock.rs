//! The time the scheduler sees: the system clock, or a hand-moved one in tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use tokio::sync::Notify;

/// Milliseconds since the Unix epoch, as the scheduler sees them.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The real clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        hermes_adapter::now_millis()
    }
}

/// A clock tests move by hand (it never moves by itself).
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(ms: i64) -> Self {
        ManualClock(AtomicI64::new(ms))
    }

    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// The scheduler's clock and its doorbell (rung when jobs change or the clock was moved).
#[derive(Clone)]
pub struct CronControl {
    pub clock: Arc<dyn Clock>,
    pub wake: Arc<Notify>,
}

impl Default for CronControl {
    fn default() -> Self {
        CronControl {
            clock: Arc::new(SystemClock),
            wake: Arc::new(Notify::new()),
        }
    }
}
