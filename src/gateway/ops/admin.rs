//! The admin HTTP endpoint (loopback by default; with `admin.token`, required beyond loopback,
//! every path but `/healthz` needs `Authorization: Bearer <token>`), bounded per connection
//! like every listener of the daemon (`hermes-listener`):
//! - `GET /healthz`: 200 while the process serves requests and its store answers;
//! - `GET /readyz`: 200 when every enabled adapter is connected and heard from recently, else 503
//!   with the reason per adapter;
//! - `GET /metrics`: Prometheus (OpenMetrics text);
//! - `GET /status`: the [`StatusReport`](crate::gateway::StatusReport) as JSON, read by `hermes status`;
//! - and what the gateway adds (its caller composes them): `/mcp`, the MCP service
//!   (`gateway/mcp_serve`), behind `mcp.serve.token` instead; the dashboard
//!   (`gateway/dashboard`) at `/`, behind its own sign-in.
//!
//! The bound address is written to `$HERMES_HOME/admin.addr` (useful with port 0).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio_util::sync::CancellationToken;

use super::status;
use crate::gateway::Shared;
use crate::metrics::metrics;

/// The running endpoint.
pub(crate) struct Admin {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    addr_file: std::path::PathBuf,
    /// What this process wrote there.
    written: String,
}

impl Admin {
    /// Stop serving; the address file goes too, unless another process of the deployment
    /// sharing this home has written its own since.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
        if std::fs::read_to_string(&self.addr_file).is_ok_and(|s| s == self.written) {
            let _ = std::fs::remove_file(&self.addr_file);
        }
    }
}

/// File holding the admin endpoint's bound address.
pub fn addr_file(home: &std::path::Path) -> std::path::PathBuf {
    home.join("admin.addr")
}

/// Start the endpoint if enabled. A failure to bind is logged, not fatal: the daemon's job is
/// answering messages.
pub(crate) async fn start(
    shared: Arc<Shared>,
    more: impl FnOnce(CancellationToken) -> Router<Arc<Shared>>,
) -> Option<Admin> {
    let config = shared.config();
    if !config.admin.enabled {
        return None;
    }
    let addr: SocketAddr = config.admin.listen.parse().ok()?;
    let token = Arc::new(config.admin.token.expose().to_owned());
    if !addr.ip().is_loopback() && token.is_empty() {
        // Validation refuses this configuration; never serve it even if it got through.
        tracing::error!(%addr, "the admin endpoint needs admin.token beyond loopback; not started");
        return None;
    }
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(%addr, error = %e, "cannot start the admin endpoint (health, metrics); continuing without it");
            return None;
        }
    };
    let bound = listener.local_addr().ok()?;
    let addr_file = addr_file(&config.home);
    let written = format!("{bound}\n");
    if let Err(e) = std::fs::write(&addr_file, &written) {
        tracing::warn!(error = %e, "cannot write {}", addr_file.display());
    }
    tracing::info!(addr = %bound, "admin endpoint listening (/healthz /readyz /metrics /status /mcp, dashboard at /)");
    let stop = CancellationToken::new();
    let app = Router::new()
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .route("/status", get(status_json))
        .route_layer(axum::middleware::from_fn_with_state(token, authorized))
        .route("/healthz", get(healthz))
        .merge(more(stop.child_token()))
        .with_state(shared);
    let limits = hermes_listener::Limits {
        max_connections: 16,
        ..hermes_listener::Limits::default()
    };
    let task = tokio::spawn(hermes_listener::serve(
        listener,
        app,
        limits,
        stop.clone(),
        "admin",
    ));
    Some(Admin {
        stop,
        task,
        addr_file,
        written,
    })
}

/// Let a request through when no token is configured or it carries the token.
async fn authorized(
    State(token): State<Arc<String>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if token.is_empty() {
        // Loopback without a token: a web page the operator opens could still reach it by DNS
        // rebinding, which shows in the Host header it sends.
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        return if loopback_host(host) {
            next.run(request).await
        } else {
            (
                StatusCode::FORBIDDEN,
                "ask by a loopback address (127.0.0.1, ::1, localhost), or set admin.token\n",
            )
                .into_response()
        };
    }
    if hermes_listener::bearer::carries(request.headers(), &token) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "a valid admin token is required (Authorization: Bearer …)\n",
        )
            .into_response()
    }
}

/// Whether a Host header names this machine by a loopback name or address (any port).
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn healthz(State(shared): State<Arc<Shared>>) -> Response {
    let store = shared.store.ping().await;
    match store {
        Ok(_) => (StatusCode::OK, "ok\n").into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("store not answering: {e}\n"),
        )
            .into_response(),
    }
}

async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    let report = status::report(&shared).await;
    let mut body = String::new();
    for a in &report.adapters {
        body.push_str(&format!(
            "{}: {} (silent {} s){}\n",
            a.platform,
            if a.ready { "ready" } else { "not ready" },
            a.silent_secs,
            a.last_error
                .as_deref()
                .filter(|_| !a.ready)
                .map(|e| format!("; last error: {e}"))
                .unwrap_or_default()
        ));
    }
    if shared.intake.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    }
    let code = if report.ready && !report.adapters.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, body).into_response()
}

async fn metrics_text(State(shared): State<Arc<Shared>>) -> Response {
    status::report(&shared).await;
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics().render(),
    )
        .into_response()
}

async fn status_json(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(status::report(&shared).await).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_pass_without_a_token() {
        for ok in [
            "127.0.0.1:8790",
            "localhost:8790",
            "[::1]:8790",
            "127.0.0.1",
            "LOCALHOST",
        ] {
            assert!(loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:8790",
            "",
            "10.0.0.1:8790",
            "[fe80::1]:80",
            "localhost.evil.example",
        ] {
            assert!(!loopback_host(bad), "{bad}");
        }
    }
}
