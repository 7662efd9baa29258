//! How many calls to one model run at once. A fixed cap when the configuration names one
//! (`llm.max_concurrent_requests`); by default a limit that follows the provider's answers, per
//! endpoint and model: halved when the provider says it is overloaded (429, 5xx, a timeout),
//! grown again on answers while the limit is what holds calls back (doubling per round trip up to
//! the last safe level, then one call at a time), like TCP's congestion window. A fixed small
//! number either wastes a provider that takes hundreds of calls or floods one that takes a few.
//!
//! The limits live in one process-wide table, so what was learned survives a configuration
//! reload, and `hermes status` and `/metrics` show them.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::LlmError;

/// Where an adaptive limit starts.
const START: f64 = 32.0;
/// The most calls an adaptive limit allows at once.
const CEILING: f64 = 512.0;
/// Failures closer together than this are one signal: the calls that were in flight together
/// fail together, and the limit is cut once for them.
const COOLDOWN: Duration = Duration::from_secs(1);

/// How calls to one model are capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    /// At most this many at once, always.
    Fixed(usize),
    /// Follow the provider's answers.
    Adaptive,
}

impl Concurrency {
    /// From `llm.max_concurrent_requests` (unset: adaptive).
    pub fn from_config(max: Option<usize>) -> Self {
        max.map_or(Concurrency::Adaptive, |n| Concurrency::Fixed(n.max(1)))
    }
}

struct State {
    mode: Concurrency,
    limit: f64,
    /// Below it the limit doubles per round trip; above it, it grows by one per round trip.
    threshold: f64,
    in_flight: usize,
    /// Callers waiting for room.
    waiting: usize,
    /// Most calls wanted at once (in flight and waiting) since the limiter was last idle.
    peak: usize,
    last_cut: Option<Instant>,
    cuts: u64,
}

/// The limit of one endpoint and model.
pub struct Limiter {
    pub endpoint: String,
    pub model: String,
    state: Mutex<State>,
    wake: Notify,
}

/// What `hermes status` shows of one limit.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LimitStatus {
    pub endpoint: String,
    pub model: String,
    pub adaptive: bool,
    pub limit: usize,
    pub in_flight: usize,
    /// Times the provider's answers lowered the limit.
    pub cuts: u64,
}

/// Limiters by base URL, then model: looked up on every call without building a key.
type Table = Mutex<HashMap<String, HashMap<String, Arc<Limiter>>>>;
static LIMITS: LazyLock<Table> = LazyLock::new(Table::default);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The limiter of `model` at `base_url`, set to `mode` (a reload may have changed it).
pub fn limiter(base_url: &str, model: &str, mode: Concurrency) -> Arc<Limiter> {
    let mut table = lock(&LIMITS);
    let found = table.get(base_url).and_then(|m| m.get(model)).cloned();
    let l = match found {
        Some(l) => l,
        None => {
            let l = Arc::new(Limiter::new(endpoint_name(base_url), model, mode));
            table
                .entry(base_url.to_owned())
                .or_default()
                .insert(model.to_owned(), l.clone());
            l
        }
    };
    drop(table);
    l.set_mode(mode);
    l
}

/// Run one call to `model` at `base_url` within its limit, and teach the limit the outcome.
pub async fn within<T>(
    base_url: &str,
    model: &str,
    mode: Concurrency,
    call: impl Future<Output = Result<T, LlmError>>,
) -> Result<T, LlmError> {
    let place = limiter(base_url, model, mode).acquire().await;
    let result = call.await;
    place.finish(&result);
    result
}

/// Every limit in use, for status and metrics.
pub fn snapshot() -> Vec<LimitStatus> {
    let table = lock(&LIMITS);
    let mut all: Vec<LimitStatus> = table
        .values()
        .flat_map(|m| m.values())
        .map(|l| l.status())
        .collect();
    all.sort_by(|a, b| (&a.endpoint, &a.model).cmp(&(&b.endpoint, &b.model)));
    all
}

/// The host (and port) of a base URL: no path, no credentials.
fn endpoint_name(base_url: &str) -> String {
    crate::config::host_and_port(base_url).unwrap_or_else(|| "provider".into())
}

impl Limiter {
    fn new(endpoint: String, model: &str, mode: Concurrency) -> Self {
        let limit = match mode {
            Concurrency::Fixed(n) => n as f64,
            Concurrency::Adaptive => START,
        };
        Limiter {
            endpoint,
            model: model.to_owned(),
            state: Mutex::new(State {
                mode,
                limit,
                threshold: CEILING,
                in_flight: 0,
                waiting: 0,
                peak: 0,
                last_cut: None,
                cuts: 0,
            }),
            wake: Notify::new(),
        }
    }

    fn set_mode(&self, mode: Concurrency) {
        let mut s = lock(&self.state);
        if s.mode == mode {
            return;
        }
        s.mode = mode;
        s.limit = match mode {
            Concurrency::Fixed(n) => n as f64,
            Concurrency::Adaptive => START,
        };
        s.threshold = CEILING;
        drop(s);
        self.wake.notify_waiters();
    }

    /// Wait for room, then hold a place until the permit is finished or dropped.
    pub async fn acquire(self: &Arc<Self>) -> Permit {
        let mut counted: Option<Waiting<'_>> = None;
        loop {
            let mut notified = pin!(self.wake.notified());
            notified.as_mut().enable();
            {
                let mut s = lock(&self.state);
                if (s.in_flight as f64) < s.limit.floor().max(1.0) {
                    s.in_flight += 1;
                    s.peak = s.peak.max(s.in_flight + s.waiting);
                    if let Some(w) = counted.take() {
                        // Uncounted here, under the lock already held.
                        std::mem::forget(w);
                        s.waiting -= 1;
                    }
                    return Permit {
                        limiter: self.clone(),
                        finished: false,
                    };
                }
                if counted.is_none() {
                    s.waiting += 1;
                    s.peak = s.peak.max(s.in_flight + s.waiting);
                    counted = Some(Waiting(self));
                }
            }
            notified.await;
        }
    }

    fn release(&self, outcome: Option<&Result<(), &LlmError>>) {
        let mut s = lock(&self.state);
        // The limit holds calls back if it was reached, calls are waiting, or more were wanted
        // at once since the limiter was last idle than it allows (the callers who waited were
        // let in as calls finished; the same demand comes back on the next round trip).
        let saturated = s.waiting > 0
            || s.in_flight as f64 >= s.limit.floor()
            || s.peak as f64 > s.limit.floor();
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 && s.waiting == 0 {
            s.peak = 0;
        }
        let before = s.limit.floor();
        if s.mode == Concurrency::Adaptive {
            match outcome {
                Some(Ok(())) if saturated => {
                    s.limit = if s.limit < s.threshold {
                        s.limit + 1.0
                    } else {
                        s.limit + 1.0 / s.limit
                    }
                    .min(CEILING);
                }
                Some(Err(e)) if overloaded(e) => self.cut(&mut s, e),
                _ => {}
            }
        }
        let grown = s.limit.floor() > before;
        drop(s);
        self.wake.notify_one();
        if grown {
            self.wake.notify_one();
        }
    }

    fn cut(&self, s: &mut State, why: &LlmError) {
        if s.last_cut.is_some_and(|t| t.elapsed() < COOLDOWN) {
            return;
        }
        s.last_cut = Some(Instant::now());
        s.threshold = (s.limit / 2.0).max(1.0);
        s.limit = s.threshold;
        s.cuts += 1;
        tracing::info!(
            endpoint = %self.endpoint,
            model = %self.model,
            limit = s.limit as usize,
            reason = why.kind(),
            "model calls at once lowered: the provider is overloaded"
        );
    }

    fn status(&self) -> LimitStatus {
        let s = lock(&self.state);
        LimitStatus {
            endpoint: self.endpoint.clone(),
            model: self.model.clone(),
            adaptive: s.mode == Concurrency::Adaptive,
            limit: s.limit.floor() as usize,
            in_flight: s.in_flight,
            cuts: s.cuts,
        }
    }
}

/// A caller counted as waiting; uncounted if it gives up (its future is dropped).
struct Waiting<'a>(&'a Limiter);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut s = lock(&self.0.state);
        s.waiting = s.waiting.saturating_sub(1);
    }
}

/// Failures that say the provider has too much to do.
fn overloaded(e: &LlmError) -> bool {
    matches!(
        e,
        LlmError::RateLimited { .. } | LlmError::Unavailable(_) | LlmError::Timeout
    )
}

/// A place among the calls in flight. Finish it with the call's outcome so the limit learns;
/// dropped unfinished (the call was cancelled), it teaches nothing.
pub struct Permit {
    limiter: Arc<Limiter>,
    finished: bool,
}

impl Permit {
    pub fn finish<T>(mut self, result: &Result<T, LlmError>) {
        self.finished = true;
        self.limiter.release(Some(&result.as_ref().map(|_| ())));
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.finished {
            self.limiter.release(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh(mode: Concurrency) -> Arc<Limiter> {
        Arc::new(Limiter::new("test".into(), "m", mode))
    }

    /// `n` calls at once, each finishing with `outcome` after a pause; the limit after.
    async fn burst(l: &Arc<Limiter>, n: usize, outcome: Result<(), LlmError>) -> usize {
        let calls: Vec<_> = (0..n)
            .map(|_| {
                let (l, outcome) = (l.clone(), outcome.clone());
                tokio::spawn(async move {
                    let place = l.acquire().await;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    place.finish(&outcome);
                })
            })
            .collect();
        for c in calls {
            c.await.expect("call");
        }
        assert_eq!(l.status().in_flight, 0);
        l.status().limit
    }

    #[tokio::test]
    async fn calls_waiting_grow_the_limit_and_a_wave_of_429s_halves_it_once() {
        let l = fresh(Concurrency::Adaptive);
        assert_eq!(l.status().limit, 32);
        // 100 at once: every answer while others wait adds one (doubling per round trip).
        let grown = burst(&l, 100, Ok(())).await;
        assert!(grown >= 64, "{grown}");
        let limited = Err(LlmError::RateLimited { retry_after: None });
        // Every call of a wave answered 429: one cut, not one per call.
        let cut = burst(&l, grown, limited).await;
        assert_eq!(cut, grown / 2);
        assert_eq!(l.status().cuts, 1);
        // Past the last safe level it grows by about one per round trip.
        let after = burst(&l, 2 * cut, Ok(())).await;
        assert!(after > cut && after <= cut + 3, "{cut} -> {after}");
    }

    #[tokio::test]
    async fn the_limit_grows_to_the_demand_it_held_back_within_one_round_trip() {
        // 50 people at once against a limit of 32: 18 wait for the first answers. The limit
        // keeps growing until it lets all 50 run, so the next round trip nobody waits (it
        // stopped at ~41 once the waiting callers were let in, and they waited again).
        let l = fresh(Concurrency::Adaptive);
        // The answers come a millisecond apart, so the waiting callers are let in between them.
        let calls: Vec<_> = (0..50u64)
            .map(|i| {
                let l = l.clone();
                tokio::spawn(async move {
                    let place = l.acquire().await;
                    tokio::time::sleep(Duration::from_millis(20 + i)).await;
                    place.finish(&Ok::<(), LlmError>(()));
                })
            })
            .collect();
        for c in calls {
            c.await.expect("call");
        }
        let grown = l.status().limit;
        assert!(grown >= 50, "{grown}");
        // Demand that was never there does not grow it.
        let again = burst(&l, 10, Ok(())).await;
        assert_eq!(again, grown);
    }

    #[tokio::test]
    async fn an_unsaturated_limit_does_not_grow_and_a_rejection_does_not_cut() {
        let l = fresh(Concurrency::Adaptive);
        for _ in 0..100 {
            let p = l.acquire().await;
            p.finish(&Ok::<(), LlmError>(()));
        }
        assert_eq!(l.status().limit, 32);
        let p = l.acquire().await;
        p.finish(&Err::<(), _>(LlmError::Rejected("bad request".into())));
        assert_eq!(l.status().limit, 32);
    }

    #[tokio::test]
    async fn a_fixed_cap_holds_the_extra_call_until_one_finishes() {
        let l = fresh(Concurrency::Fixed(2));
        let a = l.acquire().await;
        let _b = l.acquire().await;
        let waiting = tokio::spawn({
            let l = l.clone();
            async move { l.acquire().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        assert_eq!(l.status().in_flight, 2);
        a.finish(&Err::<(), _>(LlmError::Timeout));
        let _c = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .expect("joined");
        assert_eq!(l.status().limit, 2, "a fixed cap never moves");
    }

    #[tokio::test]
    async fn a_dropped_permit_frees_its_place() {
        let l = fresh(Concurrency::Fixed(1));
        drop(l.acquire().await);
        let _again = tokio::time::timeout(Duration::from_secs(5), l.acquire())
            .await
            .expect("the place was freed");
    }
}
