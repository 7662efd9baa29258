//! MCP, the client side: the agent uses the tools of the MCP servers people already run
//! (`[mcp.servers.<name>]`, stdio or Streamable HTTP), through `rmcp`, the protocol's official
//! Rust SDK.
//!
//! [`McpHub`] owns the servers. They start in the background once the gateway is receiving, in
//! parallel; each is kept connected by its [`server::Server`] (restarted with backoff when it
//! fails or dies). The hub's catalogue is every server's tools under the names the model sees
//! (`mcp_<server>_<tool>`, see [`names`]); a session takes the names of the catalogue at its
//! first turn and keeps them (a stable prompt prefix), while a tool list that changes reaches
//! the sessions that start afterwards. Every call goes through the permission matrix like any
//! tool's, with the category the tool's annotations give.

mod content;
pub mod names;
mod server;
mod tool;
mod transport;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use server::State;

use crate::config::McpConfig;
use crate::tools::Tool;

/// The MCP servers of the configuration and the tools they offer.
pub struct McpHub {
    home: PathBuf,
    /// What every stdio server's processes carry (`HERMES_CALL`), one per state directory.
    marker: String,
    servers: Mutex<BTreeMap<String, Arc<server::Server>>>,
    catalogue: Mutex<Catalogue>,
    started: std::sync::atomic::AtomicBool,
}

/// The tools of the servers, by the names the model sees.
#[derive(Default)]
struct Catalogue {
    /// What new sessions get, in a stable order.
    current: Vec<&'static str>,
    /// Every tool ever listed, by name: sessions keep calling the tools they started with.
    known: HashMap<&'static str, Arc<dyn Tool>>,
}

/// One tool as `hermes mcp test` shows it.
#[derive(Debug, Clone)]
pub struct ProbedTool {
    /// The name the model sees.
    pub name: String,
    pub category: crate::policy::Category,
    pub description: String,
}

/// Connect to the server `name` of `config` now, list its tools (as the model would see them)
/// and disconnect.
pub async fn probe(config: &McpConfig, name: &str, home: &Path) -> Result<Vec<ProbedTool>, String> {
    let section = config
        .servers
        .get(name)
        .ok_or_else(|| format!("no MCP server `{name}` in the configuration (mcp.servers)"))?;
    let s = server::Server::new(name, section.clone(), home.to_owned(), "mcp-probe".into());
    let mut listed = s.probe().await?;
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    let mut taken = HashSet::new();
    Ok(listed
        .iter()
        .map(|t| {
            let model_name = names::assign(name, &t.name, &mut taken);
            let tool = tool::McpTool::new(&model_name, t, s.clone());
            let spec = tool.spec();
            ProbedTool {
                name: model_name,
                category: spec.category,
                description: spec.description.to_owned(),
            }
        })
        .collect())
}

/// One server in `hermes status` and `/status`.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    pub state: State,
    pub tools: usize,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The tools it offers, by its own names, with their descriptions.
    pub listed: Vec<(String, String)>,
}

impl McpHub {
    /// The servers of `config` (none started yet); `home` is the state directory (the working
    /// directory of stdio servers that set none).
    pub fn new(config: &McpConfig, home: &Path) -> Arc<Self> {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(home.as_os_str().as_encoded_bytes());
        let marker = format!(
            "mcp-{}",
            digest[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        let hub = Arc::new(McpHub {
            home: home.to_owned(),
            marker,
            servers: Mutex::new(BTreeMap::new()),
            catalogue: Mutex::new(Catalogue::default()),
            started: false.into(),
        });
        hub.set_servers(config);
        hub
    }

    /// Whether every server has connected or failed at least once (sessions then keep the tool
    /// list they take).
    pub fn settled(&self) -> bool {
        self.lock_servers().values().all(|s| s.settled())
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.lock_servers().is_empty()
    }

    fn lock_servers(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<server::Server>>> {
        self.servers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The enabled servers of `config` as (unstarted) servers; the ones already here whose
    /// section did not change are kept.
    fn set_servers(
        &self,
        config: &McpConfig,
    ) -> (Vec<Arc<server::Server>>, Vec<Arc<server::Server>>) {
        let mut servers = self.lock_servers();
        let mut removed = Vec::new();
        let mut added = Vec::new();
        let wanted: BTreeMap<&String, _> =
            config.servers.iter().filter(|(_, c)| c.enabled).collect();
        servers.retain(|name, s| {
            let keep = wanted.get(name).is_some_and(|c| **c == s.config);
            if !keep {
                removed.push(s.clone());
            }
            keep
        });
        for (name, c) in wanted {
            if !servers.contains_key(name) {
                let s =
                    server::Server::new(name, c.clone(), self.home.clone(), self.marker.clone());
                servers.insert(name.clone(), s.clone());
                added.push(s);
            }
        }
        (added, removed)
    }

    /// Start every server in the background (once; the gateway calls it when it is receiving).
    /// Whatever a crashed daemon's servers left running is killed first.
    pub fn start(self: &Arc<Self>) {
        if self.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let hub = self.clone();
        tokio::spawn(async move {
            // The sweep reads /proc: off the runtime, and before any server of ours carries the
            // marker.
            let marker = hub.marker.clone();
            let swept =
                tokio::task::spawn_blocking(move || crate::tools::terminal::kill_marked(&marker));
            let left = swept.await.unwrap_or(0);
            if left > 0 {
                tracing::warn!(
                    processes = left,
                    "killed what MCP servers of an earlier run left running"
                );
            }
            let servers: Vec<_> = hub.lock_servers().values().cloned().collect();
            for s in servers {
                hub.launch(s);
            }
        });
    }

    /// Keep `s` connected, and follow its tool list into the catalogue.
    fn launch(self: &Arc<Self>, s: Arc<server::Server>) {
        // The start and a reload racing it may both offer a new server.
        if !s.claim_launch() {
            return;
        }
        let hub = Arc::downgrade(self);
        let listed = s.listed.clone();
        let watched = s.clone();
        tokio::spawn(async move {
            loop {
                let next = listed.notified();
                let Some(hub) = hub.upgrade() else { return };
                hub.rebuild();
                drop(hub);
                if watched.state() == State::Stopped {
                    return;
                }
                next.await;
            }
        });
        tokio::spawn(s.supervise());
    }

    /// Apply a reloaded configuration: servers added start, removed ones stop, changed ones
    /// restart.
    pub fn reload(self: &Arc<Self>, config: &McpConfig) {
        let (added, removed) = self.set_servers(config);
        for s in &removed {
            s.stop();
        }
        if self.started.load(std::sync::atomic::Ordering::SeqCst) {
            for s in added {
                self.launch(s);
            }
        }
        self.rebuild();
    }

    /// Stop every server (their processes end) and wait a little for them.
    pub async fn stop(&self) {
        let servers: Vec<_> = self.lock_servers().values().cloned().collect();
        for s in &servers {
            s.stop();
        }
        let all_stopped = async {
            while servers.iter().any(|s| s.state() != State::Stopped) {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(8), all_stopped).await;
        let marker = self.marker.clone();
        let _ =
            tokio::task::spawn_blocking(move || crate::tools::terminal::kill_marked(&marker)).await;
    }

    /// Recompute the catalogue from every server's last listing.
    fn rebuild(&self) {
        let servers: Vec<_> = self.lock_servers().values().cloned().collect();
        let mut taken = HashSet::new();
        let mut current = Vec::new();
        let mut fresh: Vec<(&'static str, Arc<dyn Tool>)> = Vec::new();
        for s in &servers {
            let mut listed = s.tools();
            listed.sort_by(|a, b| a.name.cmp(&b.name));
            for t in &listed {
                let name = names::assign(&s.name, &t.name, &mut taken);
                let tool: Arc<dyn Tool> = Arc::new(tool::McpTool::new(&name, t, s.clone()));
                let name = tool.spec().name;
                current.push(name);
                fresh.push((name, tool));
            }
        }
        let mut catalogue = self.catalogue.lock().unwrap_or_else(|e| e.into_inner());
        catalogue.current = current;
        catalogue.known.extend(fresh);
    }

    /// The names new sessions get.
    pub fn current(&self) -> Vec<&'static str> {
        self.catalogue
            .lock()
            .map(|c| c.current.clone())
            .unwrap_or_default()
    }

    /// The tool called `name` (current or once listed).
    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.catalogue
            .lock()
            .ok()
            .and_then(|c| c.known.get(name).cloned())
    }

    /// Every configured server and where it stands.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.lock_servers()
            .values()
            .map(|s| {
                let state = s.state();
                let listed: Vec<(String, String)> = s
                    .tools()
                    .into_iter()
                    .map(|t| {
                        let about = t.description.as_deref().unwrap_or("").to_owned();
                        (t.name.to_string(), about)
                    })
                    .collect();
                ServerStatus {
                    name: s.name.clone(),
                    tools: listed.len(),
                    transport: if s.config.url.is_some() {
                        "http"
                    } else {
                        "stdio"
                    },
                    listed,
                    state,
                }
            })
            .collect()
    }
}
