//! The dashboard's MCP servers: each configured server, how it is reached, where it stands and
//! the tools it offers (the agent sees them as `mcp_<server>_<tool>`, under the permission
//! matrix).

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::Login;
use super::html::{empty, esc, page};
use crate::gateway::Shared;

pub(crate) async fn list(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
) -> Response {
    let servers = shared.mcp.status();
    let mut body = String::new();
    if servers.is_empty() {
        body.push_str(&empty(
            "No MCP server is configured. Add [mcp.servers.<name>] with a command (stdio) or a url \
             (Streamable HTTP), reload, and its tools show here; hermes mcp test <name> tries one.",
        ));
    }
    for s in &servers {
        let up = matches!(s.state, crate::mcp::State::Ready(_));
        let _ = write!(
            body,
            "<article class=\"job\"><h3>{}</h3><p class=\"meta\">{} · <span class=\"{}\">{}</span></p>",
            esc(&s.name),
            s.transport,
            if up { "good" } else { "error" },
            esc(&s.state.describe())
        );
        if s.listed.is_empty() {
            body.push_str("<p class=\"meta\">No tools listed yet.</p>");
        } else {
            body.push_str("<ul class=\"tools\">");
            for (name, about) in &s.listed {
                let _ = write!(
                    body,
                    "<li><code>{}</code> {}</li>",
                    esc(name),
                    esc(about.lines().next().unwrap_or(""))
                );
            }
            body.push_str("</ul>");
        }
        body.push_str("</article>");
    }
    page("MCP servers", "/mcp-servers", &login, &body).into_response()
}
