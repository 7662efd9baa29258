//! Webhook mode: Telegram POSTs each update to a public HTTPS URL instead of the bot polling
//! `getUpdates`. The listener binds `listen` first, then registers the URL with `setWebhook`
//! (with a secret token and the same update kinds polling asks for), then serves it through
//! `hermes-listener`, which bounds connections, header and request time and the body size.
//!
//! Each request must carry the registered secret in `X-Telegram-Bot-Api-Secret-Token`
//! (compared in constant time). A good update is converted by the same code as a polled one and
//! stored in the inbox *before* it is answered 200, so a crash in between means Telegram sends
//! it again and the inbox recognises the copy (it is unique on platform, chat and message id;
//! button presses on the callback query id): a redelivered update, or the same update reaching
//! two processes behind one load balancer, is stored once and answered once.
//!
//! The webhook is deliberately left in place at shutdown: another process behind the same load
//! balancer may still be serving it, and updates wait at Telegram (for up to a day) until a
//! process is back, which is what a restart wants.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use hermes_adapter::{AdapterError, InboundSink};
use teloxide::Bot;
use teloxide::payloads::SetWebhookSetters;
use teloxide::prelude::Requester;
use teloxide::types::Update;
use tokio_util::sync::CancellationToken;

use crate::inbound::BotIdentity;

/// The header Telegram puts the registered secret token in.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// Largest request body accepted. An update carries one message (at most 4096 characters of
/// text, its entities, and the message it replies to), far below this; anything bigger is not
/// from Telegram and is refused (413) before it is buffered.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// How often the running listener reports itself alive. Telegram may stay quiet for hours;
/// being bound and serving is what the listener can vouch for.
const ALIVE_EVERY: Duration = Duration::from_secs(20);

/// Where Telegram delivers updates in webhook mode.
#[derive(Clone)]
pub struct WebhookSettings {
    /// The public HTTPS URL registered with `setWebhook`; its path is the one served.
    pub url: url::Url,
    /// The local address to bind (typically behind a TLS-terminating reverse proxy).
    pub listen: SocketAddr,
    /// The secret token Telegram sends back with every update; `None`: a random one is made
    /// when the listener first starts and lives as long as the process.
    pub secret: Option<String>,
}

impl std::fmt::Debug for WebhookSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSettings")
            .field("url", &self.url.as_str())
            .field("listen", &self.listen)
            .field("secret", &self.secret.as_ref().map(|_| "***"))
            .finish()
    }
}

/// The webhook of one adapter: its settings and the secret in force.
pub(crate) struct Webhook {
    settings: WebhookSettings,
    generated: OnceLock<String>,
}

impl Webhook {
    pub(crate) fn new(settings: WebhookSettings) -> Self {
        if let Some(secret) = &settings.secret {
            hermes_adapter::register_secret(secret);
        }
        Webhook {
            settings,
            generated: OnceLock::new(),
        }
    }

    /// The configured secret, or the one generated for this process.
    fn secret(&self) -> Result<String, AdapterError> {
        if let Some(s) = &self.settings.secret {
            return Ok(s.clone());
        }
        if let Some(s) = self.generated.get() {
            return Ok(s.clone());
        }
        let s = random_secret()?;
        hermes_adapter::register_secret(&s);
        Ok(self.generated.get_or_init(|| s).clone())
    }

    /// What Telegram says about the webhook, for `hermes doctor` (no URL shown: a path may
    /// carry a secret).
    pub(crate) async fn describe(&self, bot: &Bot) -> String {
        let info = match bot.get_webhook_info().await {
            Ok(info) => info,
            Err(e) => {
                return format!(
                    "webhook mode; getWebhookInfo failed: {}",
                    crate::outbound::classify(e)
                );
            }
        };
        let registered = match &info.url {
            Some(u) if *u == self.settings.url => "registered",
            Some(_) => "Telegram delivers to another URL (this one is registered at start)",
            None => "not registered yet (it is at start)",
        };
        let mut out = format!(
            "webhook mode: {registered}, {} update(s) pending",
            info.pending_update_count
        );
        if let Some(m) = info.last_error_message {
            out.push_str(&format!("; Telegram's last delivery error: {m}"));
        }
        out
    }

    /// Bind, register the URL with Telegram, and serve it until `shutdown`.
    pub(crate) async fn run(
        &self,
        bot: Bot,
        me: BotIdentity,
        sink: Arc<dyn InboundSink>,
        shutdown: &CancellationToken,
    ) -> Result<(), AdapterError> {
        let secret = self.secret()?;
        let listen = self.settings.listen;
        // Bound before Telegram is told: its first POST finds the port open, and a port in use
        // fails here without pointing Telegram at a process that cannot answer.
        let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
            AdapterError::Transient(format!(
                "cannot listen on {listen} for Telegram webhooks: {e}"
            ))
        })?;
        let register = bot
            .set_webhook(self.settings.url.clone())
            .secret_token(secret.clone())
            .allowed_updates(crate::ALLOWED_UPDATES)
            .drop_pending_updates(false);
        tokio::select! {
            r = register => r.map_err(|e| crate::listener_error(e, "setWebhook"))?,
            _ = shutdown.cancelled() => return Ok(()),
        };
        tracing::info!(%listen, url = %self.settings.url, "Telegram connected (webhook)");
        sink.heartbeat();
        let path = match self.settings.url.path() {
            "" => "/".to_owned(),
            p => p.to_owned(),
        };
        let state = Arc::new(HookState {
            bot,
            me,
            sink: sink.clone(),
            secret,
            path,
        });
        // Matched by hand rather than as an axum route: a path is the user's, and route syntax
        // (`{capture}`, `*rest`) in it must mean nothing.
        let app = Router::new().fallback(handle).with_state(state);
        let limits = hermes_listener::Limits {
            max_body_bytes: MAX_BODY_BYTES,
            ..hermes_listener::Limits::default()
        };
        hermes_listener::serve_alive(
            listener,
            app,
            limits,
            shutdown.clone(),
            "telegram-webhook",
            ALIVE_EVERY,
            || sink.heartbeat(),
        )
        .await;
        // Not `deleteWebhook`: see the module documentation.
        Ok(())
    }
}

/// 256 random bits as 64 hex digits (Telegram allows `A-Z a-z 0-9 _ -`, up to 256 characters).
fn random_secret() -> Result<String, AdapterError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| {
        AdapterError::Fatal(format!(
            "no system randomness for the webhook secret ({e}); set telegram.webhook_secret"
        ))
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

struct HookState {
    bot: Bot,
    me: BotIdentity,
    sink: Arc<dyn InboundSink>,
    secret: String,
    /// The webhook URL's path, as sent (percent-encoded).
    path: String,
}

/// One POST on the webhook path.
///
/// The status codes: Telegram repeats every request it does not get a 2XX for (and gives up
/// after some attempts), holding back later updates meanwhile, so 200 is answered exactly when
/// retrying would not help us: the update is stored, was already stored, or is of a kind hermes
/// skips (as polling skips it). 500 when the inbox cannot store it: the retry is wanted. 401
/// (wrong or missing secret) and 400 (not an update) are refusals of requests that do not come
/// from Telegram's current webhook; nothing of them is stored, and their status tells whoever
/// reads `getWebhookInfo` or the proxy log what went wrong. 413 for an oversized body comes
/// from the listener before this runs.
async fn handle(
    State(st): State<Arc<HookState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if uri.path() != st.path {
        return StatusCode::NOT_FOUND.into_response();
    }
    if method != Method::POST {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    }
    let given = headers
        .get(SECRET_HEADER)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !hermes_listener::bearer::same(given, st.secret.as_bytes()) {
        tracing::warn!(
            header_present = headers.contains_key(SECRET_HEADER),
            "rejected a Telegram webhook request without the right secret token"
        );
        return (StatusCode::UNAUTHORIZED, "wrong secret token").into_response();
    }
    // Parsed from text, as teloxide does for its own webhooks.
    let update = match std::str::from_utf8(&body)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<Update>(text).map_err(|e| e.to_string()))
    {
        Ok(update) => update,
        Err(error) => {
            tracing::warn!(%error, bytes = body.len(), "refused a Telegram webhook request that is not an update");
            return (StatusCode::BAD_REQUEST, "not a Telegram update").into_response();
        }
    };
    st.sink.heartbeat();
    match crate::deliver(&st.bot, st.sink.as_ref(), &update, &st.me).await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot store a Telegram update; Telegram will retry it");
            (StatusCode::INTERNAL_SERVER_ERROR, "not stored").into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_secret_is_long_and_uses_only_allowed_characters() {
        let a = random_secret().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, random_secret().unwrap());
    }

    #[test]
    fn a_webhook_keeps_one_generated_secret_and_debug_hides_a_configured_one() {
        let settings = WebhookSettings {
            url: "https://bot.example.com/telegram".parse().unwrap(),
            listen: "127.0.0.1:8443".parse().unwrap(),
            secret: None,
        };
        let hook = Webhook::new(settings.clone());
        assert_eq!(hook.secret().unwrap(), hook.secret().unwrap());
        let configured = WebhookSettings {
            secret: Some("configured-secret-value".into()),
            ..settings
        };
        assert!(!format!("{configured:?}").contains("configured-secret-value"));
        assert_eq!(
            Webhook::new(configured).secret().unwrap(),
            "configured-secret-value"
        );
    }
}
