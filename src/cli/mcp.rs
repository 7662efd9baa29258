//! `hermes mcp list` (the configured MCP servers, with the running daemon's view of each) and
//! `hermes mcp test <name>` (connect to one now, list its tools as the model would see them),
//! `hermes mcp serve` (the gateway's own MCP service over stdio, `mcp_serve.rs`).

use clap::Subcommand;

use super::{Outcome, emit};
use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// The configured MCP servers and, from the running daemon, each one's state and tools.
    List,
    /// Connect to one server now (starting it, for a stdio server), list its tools and print
    /// them with the names and permission categories the model gets.
    Test {
        /// The server's name (`[mcp.servers.<name>]`).
        name: String,
    },
    /// Serve the running gateway's conversations to an MCP client over stdio (the same service
    /// as `/mcp` on the admin listener; needs `mcp.serve.token`).
    Serve,
}

pub(super) async fn mcp(config: Config, action: McpAction) -> Outcome {
    match action {
        McpAction::List => list(&config).await,
        McpAction::Test { name } => test(&config, &name).await,
        McpAction::Serve => super::mcp_serve::serve(&config).await,
    }
}

async fn list(config: &Config) -> Outcome {
    if config.mcp.servers.is_empty() {
        return emit("no MCP servers configured ([mcp.servers.<name>])\n");
    }
    let running = super::status::fetch(config).await;
    let mut out = String::new();
    for (name, s) in &config.mcp.servers {
        let how = match (&s.command, &s.url) {
            (Some(c), _) => format!("stdio: {c} {}", s.args.join(" ")),
            (_, Some(u)) => format!("http: {u}"),
            _ => "(no command or url)".into(),
        };
        let state = if !s.enabled {
            "disabled".to_owned()
        } else {
            match &running {
                Ok(r) => r
                    .mcp
                    .iter()
                    .find(|m| m.name == *name)
                    .map_or("not running in the daemon (reload it)".into(), |m| {
                        m.state.clone()
                    }),
                Err(_) => "daemon not running".into(),
            }
        };
        out.push_str(&format!("{name}  {state}\n    {}\n", how.trim_end()));
    }
    if let Err(e) = &running {
        out.push_str(&format!("({})\n", e.message));
    }
    emit(&out)
}

async fn test(config: &Config, name: &str) -> Outcome {
    let tools = crate::mcp::probe(&config.mcp, name, &config.home).await?;
    let mut out = format!("{name}: connected, {} tools\n", tools.len());
    for t in tools {
        out.push_str(&format!(
            "  {}  [{}]\n      {}\n",
            t.name,
            t.category.as_str(),
            t.description
        ));
    }
    emit(&out)
}
