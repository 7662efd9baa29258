//! Semantic checks of a loaded configuration, with errors that name the key.

use super::{Config, ConfigError};

impl Config {
    /// Semantic checks the types cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let file = self.source.as_deref();
        self.llm.validate(file)?;
        self.admin.validate(file)?;
        self.agent.validate(file)?;
        self.validate_profiles()?;
        self.gateway.validate(file)?;
        self.access.validate(file)?;
        self.tools.validate(file)?;
        self.policy.validate(file)?;
        self.sessions.validate(file)?;
        self.mcp.validate(file)?;
        self.store.validate(file)?;
        // `[policy.tools]` may name an MCP server's tools: `mcp_<server>` or `mcp_<server>_<tool>`.
        if let Some(tool) = self.policy.tools.keys().find(|t| {
            t.starts_with("mcp_")
                && !self.mcp.servers.keys().any(|s| {
                    let prefix = format!("mcp_{s}");
                    **t == prefix || t.starts_with(&format!("{prefix}_"))
                })
        }) {
            return Err(ConfigError::invalid(
                file,
                "policy.tools",
                format!("`{tool}` names no tool of a configured MCP server (mcp.servers)"),
            ));
        }
        for platform in self.platforms() {
            platform.validate(file)?;
        }
        Ok(())
    }
}

/// An http(s) URL with a host, or what is wrong with it.
pub(super) fn check_http_url(value: &str) -> Result<(), String> {
    match reqwest::Url::parse(value) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        Ok(_) => Err(format!("`{value}` must be an http:// or https:// URL")),
        Err(e) => Err(format!("`{value}` is not a URL: {e}")),
    }
}

/// `host` or `host:port` of a URL: what summaries and metrics name an endpoint by (no path,
/// no credentials); `None` when it is not a URL with a host.
pub fn host_and_port(url: &str) -> Option<String> {
    let u = reqwest::Url::parse(url).ok()?;
    let host = u.host_str()?.to_owned();
    Some(match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    })
}
