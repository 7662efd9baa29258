//! The fake's webhook side: `setWebhook` / `deleteWebhook` / `getWebhookInfo` as Telegram keeps
//! them (while a webhook is set, `getUpdates` answers 409), and delivery of queued updates to
//! the registered URL the way Telegram does it: an HTTP POST of one JSON `Update` with the
//! registered secret in `X-Telegram-Bot-Api-Secret-Token`, the update leaving the queue only
//! on a 2XX answer. Every POST and the status it got back are recorded.
//!
//! Delivery happens when a test asks: [`FakeTelegram::post_update`] posts one update, in the
//! order the test chooses, so each test sees the exact status of each attempt;
//! [`FakeTelegram::deliver_pending`] pushes the whole queue the way Telegram's own loop does
//! (several connections at once, a refused update tried again until it is taken). Plain
//! `http://` URLs are accepted for loopback hosts (the real server wants HTTPS on ports 443,
//! 80, 88 or 8443).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::api::St;
use super::fake::FakeTelegram;

/// The header Telegram sends the secret token in.
pub const SECRET_HEADER: &str = "X-Telegram-Bot-Api-Secret-Token";

/// What the last successful `setWebhook` registered.
#[derive(Clone, Debug)]
pub struct Webhook {
    pub url: String,
    pub secret_token: Option<String>,
    /// `None` when the call did not name any (the previous setting stays).
    pub allowed_updates: Option<Vec<String>>,
    pub drop_pending_updates: bool,
    pub max_connections: Option<i64>,
}

/// One POST to the webhook and what the bot answered (0: no HTTP answer at all).
#[derive(Clone, Debug)]
pub struct WebhookPost {
    /// `None` for a raw body ([`FakeTelegram::post_raw`]).
    pub update_id: Option<i64>,
    pub status: u16,
    pub at: Instant,
}

fn param_str(p: &Value, k: &str) -> Option<String> {
    match p.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        v => Some(v.to_string()),
    }
}

impl St {
    /// `setWebhook` (an empty `url` removes the webhook, as in the real API).
    pub(super) fn set_webhook(&mut self, p: &Value) -> Result<Value, (u16, String)> {
        let bad = |d: &str| Err((400, format!("Bad Request: {d}")));
        let url = param_str(p, "url").unwrap_or_default();
        if url.is_empty() {
            self.webhook = None;
            return Ok(json!(true));
        }
        let Ok(parsed) = url::Url::parse(&url) else {
            return bad("bad webhook: Failed to resolve host: Name or service not known");
        };
        let loopback = matches!(parsed.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
        if parsed.scheme() != "https" && !loopback {
            return bad("bad webhook: An HTTPS URL must be provided for webhook");
        }
        let secret_token = param_str(p, "secret_token");
        if let Some(s) = &secret_token {
            let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if s.is_empty() || s.len() > 256 || !s.chars().all(allowed) {
                return bad("secret token contains unallowed characters");
            }
        }
        // JSON bodies carry a list; multipart forms (teloxide's, for the certificate) a JSON
        // text of one.
        let allowed_updates = match p.get("allowed_updates") {
            Some(Value::Array(a)) => Some(a.clone()),
            Some(Value::String(s)) => serde_json::from_str::<Vec<Value>>(s).ok(),
            _ => None,
        }
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        });
        if let Some(list) = &allowed_updates {
            self.allowed = (!list.is_empty()).then(|| list.clone());
        }
        let drop_pending_updates = p
            .get("drop_pending_updates")
            .is_some_and(|v| v.as_bool().unwrap_or(v.as_str() == Some("true")));
        if drop_pending_updates {
            self.pending.clear();
        }
        self.webhook = Some(Webhook {
            url,
            secret_token,
            allowed_updates,
            drop_pending_updates,
            max_connections: p.get("max_connections").and_then(|v| {
                v.as_i64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            }),
        });
        Ok(json!(true))
    }

    /// `getWebhookInfo`.
    pub(super) fn webhook_info(&self) -> Value {
        let mut info = json!({"url": "", "has_custom_certificate": false,
            "pending_update_count": self.pending.len()});
        if let Some(w) = &self.webhook {
            info["url"] = json!(w.url);
            if let Some(a) = &w.allowed_updates {
                info["allowed_updates"] = json!(a);
            }
        }
        info
    }
}

impl FakeTelegram {
    /// The webhook in force, if any.
    pub fn webhook(&self) -> Option<Webhook> {
        self.st().webhook.clone()
    }

    /// Waits until a webhook is registered; returns it.
    pub async fn wait_webhook(&self, timeout: Duration) -> Webhook {
        self.wait(timeout, "a webhook to be set", |st| st.webhook.clone())
            .await
    }

    /// The JSON of queued update `update_id` (for posting it by hand).
    pub fn update_json(&self, update_id: i64) -> Value {
        let update = self.st().history.get(&update_id).cloned();
        update.unwrap_or_else(|| panic!("update_json: no update {update_id}"))
    }

    /// Push every queued update to the webhook as Telegram's delivery loop does: up to
    /// `connections` POSTs at once, an update that was not taken (no 2XX) tried again after a
    /// moment, until the queue is empty. Returns the number of POSTs made.
    pub async fn deliver_pending(&self, connections: usize, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        let mut posts = 0;
        loop {
            let ids: Vec<i64> = self
                .st()
                .pending
                .iter()
                .filter_map(|u| u["update_id"].as_i64())
                .collect();
            if ids.is_empty() {
                return posts;
            }
            assert!(
                Instant::now() < deadline,
                "deliver_pending: {} update(s) still refused",
                ids.len()
            );
            for batch in ids.chunks(connections.max(1)) {
                let attempts = batch.iter().map(|id| self.post_update(*id));
                futures_util::future::join_all(attempts).await;
                posts += batch.len();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Every POST to the webhook so far.
    pub fn webhook_posts(&self) -> Vec<WebhookPost> {
        self.st().webhook_posts.clone()
    }

    /// Deliver the queued update `update_id` to the webhook as Telegram does (its JSON, the
    /// registered secret). On a 2XX answer it leaves the queue; otherwise it stays (Telegram
    /// would try again). Posting the same id again is a redelivery. Returns the status.
    pub async fn post_update(&self, update_id: i64) -> u16 {
        let (update, hook) = {
            let st = self.st();
            let update = st.history.get(&update_id).cloned();
            let update = update.unwrap_or_else(|| panic!("post_update: no update {update_id}"));
            let hook = st.webhook.clone().expect("post_update: no webhook is set");
            (update, hook)
        };
        let status = post(
            &hook.url,
            update.to_string().into_bytes(),
            hook.secret_token.as_deref(),
        )
        .await;
        let mut st = self.st();
        if (200..300).contains(&status) {
            st.pending
                .retain(|u| u["update_id"].as_i64() != Some(update_id));
        }
        st.webhook_posts.push(WebhookPost {
            update_id: Some(update_id),
            status,
            at: Instant::now(),
        });
        status
    }

    /// POST `body` to the registered webhook URL with `secret` in the secret header (`None`:
    /// without the header): forgeries, wrong secrets and broken bodies.
    pub async fn post_raw(&self, body: impl Into<Vec<u8>>, secret: Option<&str>) -> u16 {
        let hook = self.webhook().expect("post_raw: no webhook is set");
        let status = post(&hook.url, body.into(), secret).await;
        self.st().webhook_posts.push(WebhookPost {
            update_id: None,
            status,
            at: Instant::now(),
        });
        status
    }
}

/// One POST as Telegram's webhook client sends it; the answer's status (0 if none came).
async fn post(url: &str, body: Vec<u8>, secret: Option<&str>) -> u16 {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("http client");
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .body(body);
    if let Some(s) = secret {
        req = req.header(SECRET_HEADER, s);
    }
    match req.send().await {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}
