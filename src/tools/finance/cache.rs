//! [`TtlCache`]: answers of the market data API kept for a short time, so that asking for the
//! same quote twice in a minute (or the same company profile twice in a day) costs one request
//! of the provider's quota. Each entry remembers when it was fetched: what the model is shown
//! from the cache says so, with that time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Entries kept at most; when full, expired entries go first, then the oldest.
const MAX_ENTRIES: usize = 512;

/// A fetched answer.
#[derive(Debug, Clone)]
pub struct Cached {
    pub value: Value,
    /// When it was fetched (wall clock, for the person).
    pub fetched_at: jiff::Timestamp,
    /// When it was fetched (monotonic, for expiry).
    stored: Instant,
}

/// Answers by request (path and parameters, never the key).
#[derive(Default)]
pub struct TtlCache {
    entries: Mutex<HashMap<String, Cached>>,
}

impl TtlCache {
    /// The answer stored under `key` if it is younger than `ttl`.
    pub fn get(&self, key: &str, ttl: Duration) -> Option<Cached> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(key)
            .filter(|c| c.stored.elapsed() < ttl)
            .cloned()
    }

    /// Store `value`, fetched now, under `key`.
    pub fn put(&self, key: String, value: Value) -> Cached {
        let cached = Cached {
            value,
            fetched_at: jiff::Timestamp::now(),
            stored: Instant::now(),
        };
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
            // Nothing lives longer than a day here.
            entries.retain(|_, c| c.stored.elapsed() < Duration::from_secs(24 * 3600));
            if entries.len() >= MAX_ENTRIES
                && let Some(oldest) = entries
                    .iter()
                    .min_by_key(|(_, c)| c.stored)
                    .map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(key, cached.clone());
        cached
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn entries_expire_and_the_cache_stays_bounded() {
        let cache = TtlCache::default();
        let first = cache.put("quote?AAPL".into(), json!({"c": 1}));
        let hit = cache.get("quote?AAPL", Duration::from_secs(60)).unwrap();
        assert_eq!(hit.value, json!({"c": 1}));
        assert_eq!(hit.fetched_at, first.fetched_at);
        assert!(cache.get("quote?AAPL", Duration::ZERO).is_none(), "expired");
        assert!(cache.get("quote?MSFT", Duration::from_secs(60)).is_none());
        for i in 0..MAX_ENTRIES + 10 {
            cache.put(format!("k{i}"), json!(i));
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        let newest = format!("k{}", MAX_ENTRIES + 9);
        assert!(cache.get(&newest, Duration::from_secs(60)).is_some());
    }
}
