//! The OpenAI-compatible HTTP API (`/v1/chat/completions`, `/v1/models`) as a platform of its
//! own: a request is an inbound message like a chat's (the same inbox, lanes, permissions,
//! history and outbox), and the answer the outbox delivers for its conversation is the
//! response. Each API key is one person (`api:<key name>`); a conversation is named by the
//! request (`user`, `X-Hermes-Session`) or, without a name, is the request's own messages.
//!
//! `routes.rs` serves HTTP (keys, CORS, models), `completions.rs` and `responses.rs` the two
//! APIs, `ask.rs` turns a request into an inbound message and waits for its answer,
//! `waiting.rs` pairs each conversation's waiting request with what the core sends it (streamed
//! previews, the answer), `wire.rs` holds the bodies and errors in OpenAI's shape.

mod approvals;
mod ask;
mod completions;
mod kept;
mod responses;
mod routes;
mod state;
mod waiting;
mod wire;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{
    Adapter, AdapterError, Capabilities, ChatId, InboundSink, LengthUnit, Outbound, Platform,
    SendError, SentId,
};
use tokio_util::sync::CancellationToken;

use waiting::Waiting;

/// How often the listener tells the core it is alive.
const ALIVE_EVERY: Duration = Duration::from_secs(20);

/// What the API needs from the configuration.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    pub listen: SocketAddr,
    /// Key name → token.
    pub keys: BTreeMap<String, String>,
    /// The model names `/v1/models` lists (the configured ones); `hermes` is added.
    pub models: Vec<String>,
    /// Longest a request waits for its answer.
    pub request_timeout: Duration,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Browser origins allowed to call it (CORS); none: no CORS headers at all.
    pub cors_origins: Vec<String>,
    /// Requests one key may have waiting at once; more get 429 with `Retry-After`.
    pub requests_per_key: usize,
}

/// The API adapter.
pub struct ApiAdapter {
    settings: Arc<ApiSettings>,
    waiting: Arc<Waiting>,
}

impl ApiAdapter {
    pub fn new(settings: ApiSettings) -> Self {
        ApiAdapter {
            settings: Arc::new(settings),
            waiting: Arc::new(Waiting::default()),
        }
    }
}

#[async_trait]
impl Adapter for ApiAdapter {
    fn platform(&self) -> Platform {
        Platform::Api
    }

    /// Every process serves the API.
    fn receives_alone(&self) -> bool {
        false
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            // One answer is one response: never split.
            max_message_len: 1_000_000,
            length_unit: LengthUnit::Chars,
            edit: true,
            typing: false,
            // Buttons become prompts the key answers (`/v1/hermes/approvals`).
            buttons: true,
            threads: false,
            attachments: false,
            // Previews are deltas on the response, not posted messages.
            free_edits: true,
        }
    }

    async fn run(
        &self,
        sink: Arc<dyn InboundSink>,
        shutdown: CancellationToken,
    ) -> Result<(), AdapterError> {
        let listen = self.settings.listen;
        let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
            AdapterError::Transient(format!("cannot listen on {listen} for the HTTP API: {e}"))
        })?;
        let bound = listener.local_addr().map_or(listen, |a| a);
        tracing::info!(addr = %bound, "HTTP API listening (/v1/chat/completions /v1/models)");
        sink.heartbeat();
        let app = routes::router(self.settings.clone(), self.waiting.clone(), sink.clone());
        let lifetime = self.settings.request_timeout + Duration::from_secs(60);
        let limits = hermes_listener::Limits {
            max_connections: 512,
            request_timeout: lifetime,
            connection_lifetime: lifetime,
            max_body_bytes: self.settings.max_body_bytes,
            ..hermes_listener::Limits::default()
        };
        hermes_listener::serve_alive(
            listener,
            app,
            limits,
            shutdown.clone(),
            "api",
            ALIVE_EVERY,
            || sink.heartbeat(),
        )
        .await;
        Ok(())
    }

    async fn send(&self, out: &Outbound) -> Result<SentId, SendError> {
        Ok(self.waiting.send(out))
    }

    async fn edit(&self, chat: &ChatId, id: &SentId, text: &str) -> Result<(), SendError> {
        self.waiting.edit(chat, id, text);
        Ok(())
    }

    /// The answer replacing a streamed preview: the waiting request hears what it adds, and
    /// that it is the answer (its key says so), which an edit alone could not tell.
    async fn replace(&self, out: &Outbound) -> Result<(), SendError> {
        self.waiting.send(out);
        Ok(())
    }

    async fn probe(&self) -> Result<String, AdapterError> {
        Ok(format!(
            "HTTP API on {} with {} key(s)",
            self.settings.listen,
            self.settings.keys.len()
        ))
    }
}
