//! hermes as an MCP server: another agent reads the running gateway's conversations, searches
//! them, sees the confirmations waiting for an answer and, with `mcp.serve.allow_send`, sends
//! to a chat through the outbox and answers confirmations.
//!
//! Served over Streamable HTTP at `/mcp` on the admin listener, stateless (every request stands
//! alone, so a client survives a daemon restart), behind `mcp.serve.token`; `hermes mcp serve`
//! bridges stdio to it. A client reaches the chats `mcp.serve.chats` lists, or with none every
//! chat hermes holds a conversation in; anything else looks like it does not exist.
//!
//! The tools are in `read.rs` (conversations, search, pending confirmations) and `act.rs`
//! (sending, answering).

mod act;
mod read;

use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use hermes_adapter::{ChatId, Platform, SessionKey, SessionScope};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::gateway::Shared;

/// The tools that act; listed and callable only with `mcp.serve.allow_send`.
const ACTING: &[&str] = &["message_send", "approval_answer"];

/// What a client sees of the gateway, built per request (the service is stateless).
#[derive(Clone)]
pub(crate) struct Service {
    shared: Arc<Shared>,
    tools: Arc<ToolRouter<Service>>,
}

/// The `/mcp` endpoint: the MCP service as a tower service for the admin router, stopped with
/// `stop`.
pub(crate) fn http(
    shared: Arc<Shared>,
    stop: CancellationToken,
) -> StreamableHttpService<Service, LocalSessionManager> {
    let tools = Arc::new(Service::read_tools() + Service::act_tools());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        // The bearer token guards it; a browser page cannot send one (no DNS-rebinding risk),
        // and beyond loopback the Host is the operator's name for the machine.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(1 << 20)
        .with_cancellation_token(stop);
    StreamableHttpService::new(
        move || {
            Ok(Service {
                shared: shared.clone(),
                tools: tools.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// `/mcp`: the MCP service, behind its own token (`mcp.serve.token`), not the admin one.
pub(crate) fn route(shared: Arc<Shared>, stop: CancellationToken) -> axum::Router<Arc<Shared>> {
    axum::Router::new()
        .route_service("/mcp", http(shared.clone(), stop))
        .layer(axum::middleware::from_fn_with_state(shared, authorized))
}

/// Let a request through to `/mcp` when it carries `mcp.serve.token` (read at each request, so
/// a reload changes it); without a token the service is off.
pub(crate) async fn authorized(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let config = shared.config();
    let token = config.mcp.serve.token.expose();
    if token.is_empty() {
        return (
            StatusCode::NOT_FOUND,
            "the MCP service is off: set mcp.serve.token (or HERMES_MCP_TOKEN)\n",
        )
            .into_response();
    }
    if hermes_listener::bearer::carries(request.headers(), token) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "a valid MCP token is required (Authorization: Bearer <mcp.serve.token>)\n",
        )
            .into_response()
    }
}

impl Service {
    fn may_act(&self) -> bool {
        self.shared.config().mcp.serve.allow_send
    }

    /// Whether the client may reach `chat` of `platform` (`mcp.serve.chats`, or with none every
    /// chat hermes holds a conversation in, which the caller has already found).
    fn reaches(&self, platform: Platform, chat: Option<&ChatId>) -> bool {
        let config = self.shared.config();
        match chat {
            Some(chat) => config.mcp.serve.lists(platform, chat).unwrap_or(true),
            None => config.mcp.serve.chats.is_empty(),
        }
    }

    /// The chat a session is held in: the key's for a group, the stored one for a direct chat.
    async fn chat_of(&self, key: &SessionKey) -> Option<ChatId> {
        if let SessionScope::Group { chat, .. } = &key.scope {
            return Some(chat.clone());
        }
        let session = self.shared.store.session_current(key).await.ok()??;
        self.shared
            .store
            .session_summary(session.id)
            .await
            .ok()??
            .chat
    }
}

/// A tool's answer: the value as JSON text and as structured content.
fn answer(value: serde_json::Value) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::structured(value))
}

/// A tool's failure the calling agent reads (a result with `isError`, not a protocol error).
fn refuse(text: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::error(vec![ContentBlock::text(text.into())]))
}

/// A store failure, as the client sees it (secrets scrubbed).
fn store_failed(e: impl std::fmt::Display) -> Result<CallToolResult, ErrorData> {
    refuse(hermes_adapter::scrub(&format!(
        "the store did not answer: {e}"
    )))
}

/// Milliseconds since the epoch as RFC 3339 (UTC).
fn time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| t.to_string())
}

impl ServerHandler for Service {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hermes", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The conversations of a running hermes gateway (Telegram, Discord, Slack, email, \
                 Matrix): list and read them, search what was said, see confirmations waiting \
                 for an answer; with allow_send, send to a chat and answer confirmations."
                    .to_string(),
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let acting = self.may_act();
        let tools: Vec<Tool> = self
            .tools
            .list_all()
            .into_iter()
            .filter(|t| acting || !ACTING.contains(&t.name.as_ref()))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if ACTING.contains(&name) && !self.may_act() {
            return None;
        }
        self.tools.get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if ACTING.contains(&request.name.as_ref()) && !self.may_act() {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "{} is off: this hermes is read only to MCP clients (mcp.serve.allow_send = false)",
                request.name
            ))])
            .into());
        }
        let tools = self.tools.clone();
        tools
            .call(ToolCallContext::new(self, request, context))
            .await
    }
}
