//! `hermes mcp serve`: the running gateway's MCP service (`/mcp` on its admin listener) over
//! stdio, for MCP clients that start a command. A bridge, not a second server: every request is
//! passed to the daemon, which holds the conversations, the outbox and the waiting
//! confirmations, and answers with its own rules (`mcp.serve.*`).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, Implementation,
    InitializeRequestParams, ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};

use super::Outcome;
use crate::config::Config;

/// The stdio side: hands each request to the daemon.
struct Bridge {
    daemon: Peer<RoleClient>,
    info: ServerConfig,
}

fn relay(e: ServiceError) -> ErrorData {
    match e {
        ServiceError::McpError(e) => e,
        other => ErrorData::internal_error(
            format!("the hermes gateway did not answer: {other} (is it running?)"),
            None,
        ),
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.daemon.list_tools(request).await.map_err(relay)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.daemon
            .call_tool(request)
            .await
            .map(Into::into)
            .map_err(relay)
    }
}

pub(super) async fn serve(config: &Config) -> Outcome {
    let serve = &config.mcp.serve;
    if !serve.enabled() {
        return Err(
            "the MCP service is off: set mcp.serve.token (or HERMES_MCP_TOKEN) for the gateway and for this command"
                .into(),
        );
    }
    let addr = super::status::admin_addr(config);
    let url = format!("http://{addr}/mcp");
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone())
            .auth_header(serve.token.expose().to_owned()),
    );
    let client = InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("hermes-mcp-serve", env!("CARGO_PKG_VERSION")),
    );
    let daemon = client.serve(transport).await.map_err(|e| {
        format!(
            "cannot reach the gateway's MCP service at {url}: {e} (is `hermes gateway` running, with the same mcp.serve.token?)"
        )
    })?;
    let peer = daemon
        .peer_info()
        .ok_or("the gateway's MCP service did not introduce itself")?;
    let mut info = ServerConfig::new(peer.capabilities.clone());
    if let Some(server) = &peer.server_info {
        info = info.with_server_info(server.clone());
    }
    if let Some(text) = &peer.instructions {
        info = info.with_instructions(text.clone());
    }
    let bridge = Bridge {
        daemon: daemon.peer().clone(),
        info,
    };
    let running = bridge
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP client on stdin did not start a session: {e}"))?;
    let _ = running.waiting().await;
    let _ = daemon.cancel().await;
    Ok(())
}
