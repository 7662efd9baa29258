//! [`Server`]: one configured MCP server, kept connected: started in the background, its tools
//! listed (again when it says they changed), restarted with backoff when it fails or dies, and
//! stopped with the daemon. Calls wait a little for a server that is (re)starting, then fail
//! with a reason the model can read.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, Implementation, InitializeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::config::McpServerConfig;

/// Longest wait between two attempts to start a failing server.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long a call waits for a server that is starting before it gives up.
const CALL_WAIT: Duration = Duration::from_secs(10);

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Starting,
    /// Connected, with this many tools offered (after the allow and exclude lists).
    Ready(usize),
    /// Not connected; why, and the next attempt is on its way.
    Failed(String),
    Stopped,
}

impl State {
    pub fn describe(&self) -> String {
        match self {
            State::Starting => "starting".into(),
            State::Ready(n) => format!("connected, {n} tools"),
            State::Failed(why) => format!("failed ({why}); retrying"),
            State::Stopped => "stopped".into(),
        }
    }
}

/// One tool as the server lists it (after the allow and exclude lists).
pub type Listed = rmcp::model::Tool;

/// One configured server and its connection.
pub struct Server {
    pub name: String,
    pub config: McpServerConfig,
    /// The peer to call while connected.
    peer: watch::Sender<Option<Peer<RoleClient>>>,
    state: Mutex<State>,
    /// It has connected or failed at least once since it was started.
    settled: std::sync::atomic::AtomicBool,
    /// Its supervisor was started (once).
    launched: std::sync::atomic::AtomicBool,
    tools: Mutex<Vec<Listed>>,
    /// Rung when the tool list changed (a new listing, or the server's notification).
    pub listed: Arc<Notify>,
    stop: CancellationToken,
    /// The state directory (the working directory of a stdio server that sets none).
    home: std::path::PathBuf,
    /// The marker its processes carry (`HERMES_CALL`), so that none outlives the daemon.
    marker: String,
}

/// What the server may ask of us: only to say that its tools changed.
struct Handler {
    changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    fn get_info(&self) -> InitializeRequestParams {
        InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("hermes", env!("CARGO_PKG_VERSION")),
        )
    }
}

impl Server {
    pub fn new(
        name: &str,
        config: McpServerConfig,
        home: std::path::PathBuf,
        marker: String,
    ) -> Arc<Self> {
        Arc::new(Server {
            name: name.to_owned(),
            config,
            peer: watch::channel(None).0,
            state: Mutex::new(State::Starting),
            settled: false.into(),
            launched: false.into(),
            tools: Mutex::new(Vec::new()),
            listed: Arc::new(Notify::new()),
            stop: CancellationToken::new(),
            home,
            marker,
        })
    }

    pub fn state(&self) -> State {
        self.state
            .lock()
            .map(|s| s.clone())
            .unwrap_or(State::Stopped)
    }

    /// Claim the start of its supervisor: true the first time only.
    pub fn claim_launch(&self) -> bool {
        !self
            .launched
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether it has connected or failed at least once.
    pub fn settled(&self) -> bool {
        self.settled.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn set_state(&self, state: State) {
        if matches!(state, State::Ready(_) | State::Failed(_)) {
            self.settled
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if let Ok(mut s) = self.state.lock() {
            *s = state;
        }
    }

    /// The tools of the last listing.
    pub fn tools(&self) -> Vec<Listed> {
        self.tools.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Stop the server (its process, if any, is killed) and keep it stopped.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Keep the server connected until [`Server::stop`].
    pub async fn supervise(self: Arc<Self>) {
        let mut backoff = Duration::from_secs(1);
        while !self.stop.is_cancelled() {
            self.set_state(State::Starting);
            let changed = Arc::new(Notify::new());
            let connect = tokio::time::timeout(
                Duration::from_secs(self.config.connect_timeout_secs),
                self.connect(changed.clone()),
            );
            let started = tokio::select! {
                r = connect => r.unwrap_or_else(|_| Err(format!(
                    "no answer within {} s (mcp.servers.{}.connect_timeout_secs)",
                    self.config.connect_timeout_secs, self.name
                ))),
                () = self.stop.cancelled() => break,
            };
            let why = match started {
                Ok((service, pid)) => {
                    backoff = Duration::from_secs(1);
                    let why = self.serve(service, changed).await;
                    if let Some(pid) = pid {
                        kill_group(pid);
                    }
                    why
                }
                Err(why) => why,
            };
            let _ = self.peer.send_replace(None);
            if self.stop.is_cancelled() {
                break;
            }
            tracing::warn!(server = %self.name, error = %why, "MCP server not connected; retrying in {backoff:?}");
            self.set_state(State::Failed(why));
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = self.stop.cancelled() => break,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        let _ = self.peer.send_replace(None);
        self.set_state(State::Stopped);
        self.listed.notify_waiters();
    }

    /// Connect once, list the tools and disconnect (`hermes mcp test`).
    pub async fn probe(&self) -> Result<Vec<Listed>, String> {
        let connect = tokio::time::timeout(
            Duration::from_secs(self.config.connect_timeout_secs),
            self.connect(Arc::new(Notify::new())),
        );
        let (service, pid) = connect.await.unwrap_or_else(|_| {
            Err(format!(
                "no answer within {} s (mcp.servers.{}.connect_timeout_secs)",
                self.config.connect_timeout_secs, self.name
            ))
        })?;
        let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
        if let Some(pid) = pid {
            kill_group(pid);
        }
        Ok(self.tools())
    }

    /// Start the process or open the connection, and list the tools. The process id of a
    /// stdio server comes along (its group is killed when it ends).
    async fn connect(
        &self,
        changed: Arc<Notify>,
    ) -> Result<(RunningService<RoleClient, Handler>, Option<u32>), String> {
        let handler = Handler { changed };
        let (service, pid) = if let Some(command) = &self.config.command {
            let (transport, pid) = super::transport::stdio(
                &self.name,
                command,
                &self.config,
                &self.home,
                &self.marker,
            )?;
            (
                handler.serve(transport).await.map_err(|e| e.to_string())?,
                pid,
            )
        } else {
            let transport = super::transport::http(&self.name, &self.config)?;
            (
                handler.serve(transport).await.map_err(|e| e.to_string())?,
                None,
            )
        };
        self.relist(service.peer()).await?;
        Ok((service, pid))
    }

    /// While connected: answer list changes, until the connection ends (why) or the stop.
    async fn serve(
        &self,
        service: RunningService<RoleClient, Handler>,
        changed: Arc<Notify>,
    ) -> String {
        let peer = service.peer().clone();
        let _ = self.peer.send_replace(Some(peer.clone()));
        tracing::info!(server = %self.name, tools = self.tools().len(), "MCP server connected");
        let token = service.cancellation_token();
        let mut ended = std::pin::pin!(service.waiting());
        loop {
            tokio::select! {
                quit = &mut ended => {
                    return match quit {
                        Ok(reason) => format!("the connection ended ({reason:?})"),
                        Err(e) => format!("the connection failed ({e})"),
                    };
                }
                () = changed.notified() => {
                    if let Err(why) = self.relist(&peer).await {
                        tracing::warn!(server = %self.name, error = %why, "MCP tools could not be listed again");
                    }
                }
                () = self.stop.cancelled() => {
                    token.cancel();
                    let _ = tokio::time::timeout(Duration::from_secs(5), &mut ended).await;
                    return "stopped".into();
                }
            }
        }
    }

    /// List the tools again and publish them.
    async fn relist(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let all = peer
            .list_all_tools()
            .await
            .map_err(|e| format!("cannot list its tools: {e}"))?;
        let chosen: Vec<Listed> = all
            .into_iter()
            .filter(|t| {
                self.config
                    .tools
                    .as_ref()
                    .is_none_or(|only| only.iter().any(|n| n == t.name.as_ref()))
                    && !self
                        .config
                        .exclude_tools
                        .iter()
                        .any(|n| n == t.name.as_ref())
            })
            .collect();
        self.set_state(State::Ready(chosen.len()));
        if let Ok(mut tools) = self.tools.lock() {
            *tools = chosen;
        }
        self.listed.notify_waiters();
        Ok(())
    }

    /// Call `tool` with `arguments`; the error says why in words for the model.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        cancel: &CancellationToken,
    ) -> Result<rmcp::model::CallToolResult, CallError> {
        let peer = self.connected_peer().await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        let limit = Duration::from_secs(self.config.timeout_secs);
        tokio::select! {
            r = tokio::time::timeout(limit, peer.call_tool(params)) => match r {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(e)) => Err(CallError::Failed(format!("the MCP server `{}` failed the call: {e}", self.name))),
                Err(_) => Err(CallError::Failed(format!(
                    "the MCP server `{}` did not answer within {} s (mcp.servers.{}.timeout_secs); the call was abandoned",
                    self.name, self.config.timeout_secs, self.name
                ))),
            },
            () = cancel.cancelled() => Err(CallError::Cancelled),
        }
    }

    /// The peer, waiting up to [`CALL_WAIT`] for a server that is (re)starting.
    async fn connected_peer(&self) -> Result<Peer<RoleClient>, CallError> {
        let mut rx = self.peer.subscribe();
        let wait = tokio::time::timeout(CALL_WAIT, rx.wait_for(Option::is_some)).await;
        match wait {
            Ok(Ok(peer)) => Ok(peer.clone().expect("waited for a peer")),
            _ => Err(CallError::Failed(format!(
                "the MCP server `{}` is not connected: {}",
                self.name,
                self.state().describe()
            ))),
        }
    }
}

/// Why a call has no result.
#[derive(Debug)]
pub enum CallError {
    Failed(String),
    Cancelled,
}

/// SIGKILL the process group a stdio server leads (what it started goes with it).
fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid)
        && pid > 0
    {
        // SAFETY: kill(2) of a process group we created.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}
