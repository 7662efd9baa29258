//! The responses of the Responses API kept for `GET /v1/responses/{id}`: the last [`KEEP`],
//! each readable only with the key that made it, in memory for the daemon's life.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::Value;

/// Responses kept.
pub(crate) const KEEP: usize = 1000;

/// Response id → (the key that made it, the response).
type ById = HashMap<String, (String, Value)>;

/// The responses kept, by id, with the key that made each, and their order (oldest first).
#[derive(Default)]
pub(crate) struct Kept {
    inner: Mutex<(ById, VecDeque<String>)>,
}

impl Kept {
    pub fn keep(&self, key: &str, response: &Value) {
        let Some(id) = response["id"].as_str() else {
            return;
        };
        if let Ok(mut g) = self.inner.lock() {
            let (by_id, order) = &mut *g;
            by_id.insert(id.to_owned(), (key.to_owned(), response.clone()));
            order.push_back(id.to_owned());
            while order.len() > KEEP {
                if let Some(old) = order.pop_front() {
                    by_id.remove(&old);
                }
            }
        }
    }

    pub fn get(&self, key: &str, id: &str) -> Option<Value> {
        let g = self.inner.lock().ok()?;
        g.0.get(id)
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }
}
