//! HTTP listeners that bound what one client can hold, for every port the daemon opens (the
//! Slack Events API, the admin endpoint): at most `max_connections` connections at once (more are
//! closed at accept), the request head within `header_timeout`, the whole request (body and
//! answer) within `request_timeout`, a body of at most `max_body_bytes` (refused from its
//! `Content-Length` before anything is buffered, and cut off when a chunked body grows past it),
//! and a connection's life within `connection_lifetime`. A slow-loris client then holds one slot
//! for seconds, not the port for ever.

pub mod bearer;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

/// What one client may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub request_timeout: Duration,
    pub max_body_bytes: usize,
    pub connection_lifetime: Duration,
}

impl Default for Limits {
    /// Generous for webhooks and scrapers, tight for anyone holding connections open.
    fn default() -> Self {
        Limits {
            max_connections: 64,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_body_bytes: 1024 * 1024,
            connection_lifetime: Duration::from_secs(120),
        }
    }
}

/// How long a connection still gets to finish its answer at shutdown or at the end of its life.
const FINISH: Duration = Duration::from_secs(2);

/// [`serve`], calling `alive` every `every` meanwhile: an adapter's sign of life to the core,
/// which restarts a listener that goes quiet.
pub async fn serve_alive(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: CancellationToken,
    name: &'static str,
    every: Duration,
    alive: impl Fn(),
) {
    let beat = async {
        loop {
            tokio::time::sleep(every).await;
            alive();
        }
    };
    tokio::select! {
        () = serve(listener, app, limits, shutdown, name) => {}
        () = beat => {}
    }
}

/// Serve `app` on `listener` within `limits` until `shutdown`; connections still open then get
/// a moment to finish. Returns only on shutdown (accept errors are logged and waited out).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: CancellationToken,
    name: &'static str,
) {
    let app = app
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            limits.request_timeout,
        ))
        .layer(RequestBodyLimitLayer::new(limits.max_body_bytes))
        .layer(axum::extract::DefaultBodyLimit::max(limits.max_body_bytes));
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let open = tokio_util::task::TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, usually: wait rather than spin.
                    tracing::warn!(listener = name, error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(
                listener = name,
                %peer,
                max = limits.max_connections,
                "too many open connections: closing a new one"
            );
            drop(stream);
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let stop = shutdown.clone();
        open.spawn(async move {
            let _slot = slot;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let conn = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            let ended = tokio::select! {
                r = conn.as_mut() => Some(r),
                _ = tokio::time::sleep(limits.connection_lifetime) => None,
                _ = stop.cancelled() => None,
            };
            let result = match ended {
                Some(r) => r,
                None => {
                    conn.as_mut().graceful_shutdown();
                    tokio::time::timeout(FINISH, conn).await.unwrap_or(Ok(()))
                }
            };
            if let Err(e) = result {
                // Header timeouts, resets and garbage from a client: its problem, not ours.
                tracing::debug!(listener = name, %peer, error = %e, "connection ended");
            }
        });
    }
    open.close();
    let _ = tokio::time::timeout(FINISH * 2, open.wait()).await;
}

#[cfg(test)]
mod tests;
