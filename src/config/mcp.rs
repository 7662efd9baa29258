//! `[mcp]`: the MCP servers whose tools the agent uses (`[mcp.servers.<name>]`, each a command
//! run over stdio or a Streamable HTTP URL).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::policy::Category;

/// `[mcp]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// The servers, by name (the name is part of each tool's: `mcp_<name>_<tool>`).
    pub servers: BTreeMap<String, McpServerConfig>,
    /// hermes as an MCP server to other agents.
    pub serve: super::McpServeConfig,
}

/// `[mcp.servers.<name>]`: one server, either `command` (stdio) or `url` (Streamable HTTP).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    pub enabled: bool,
    /// The program of a stdio server (looked up in `PATH`).
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Its environment: only these and `PATH`, `HOME`, `LANG`, never the daemon's credentials.
    #[serde(serialize_with = "redacted_values")]
    pub env: BTreeMap<String, String>,
    /// Its working directory; none: the daemon's state directory.
    pub cwd: Option<PathBuf>,
    /// The endpoint of a Streamable HTTP server.
    pub url: Option<String>,
    /// Headers sent with every request to it.
    #[serde(serialize_with = "redacted_values")]
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token for it (`Authorization: Bearer …`).
    pub bearer_token_env: Option<String>,
    /// Longest one tool call may take.
    pub timeout_secs: u64,
    /// Longest starting and listing the tools may take.
    pub connect_timeout_secs: u64,
    /// Only these of its tools (by the server's names); none: all.
    pub tools: Option<Vec<String>>,
    /// Never these.
    pub exclude_tools: Vec<String>,
    /// The permission category of all its tools, instead of the one its annotations give
    /// (`readOnlyHint`: read, `destructiveHint`: system, otherwise write).
    pub category: Option<Category>,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        McpServerConfig {
            enabled: true,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            bearer_token_env: None,
            timeout_secs: 60,
            connect_timeout_secs: 30,
            tools: None,
            exclude_tools: Vec::new(),
            category: None,
        }
    }
}

/// Maps whose values may be credentials print their keys only.
fn redacted_values<S: serde::Serializer>(
    map: &BTreeMap<String, String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut out = s.serialize_map(Some(map.len()))?;
    for key in map.keys() {
        out.serialize_entry(key, "***")?;
    }
    out.end()
}

/// Whether `name` can name a server: letters, digits, `_` and `-`, at most 32.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl McpConfig {
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        self.serve.validate(file)?;
        for (name, server) in &self.servers {
            let key = |k: &str| format!("mcp.servers.{name}.{k}");
            if !valid_server_name(name) {
                return Err(ConfigError::invalid(
                    file,
                    &format!("mcp.servers.{name}"),
                    "a server name is 1-32 letters, digits, `_` or `-`".into(),
                ));
            }
            match (&server.command, &server.url) {
                (Some(_), Some(_)) => {
                    return Err(ConfigError::invalid(
                        file,
                        &key("url"),
                        "give either `command` (stdio) or `url` (Streamable HTTP), not both".into(),
                    ));
                }
                (None, None) => {
                    return Err(ConfigError::invalid(
                        file,
                        &key("command"),
                        "is required: a `command` to run (stdio) or a `url` (Streamable HTTP)"
                            .into(),
                    ));
                }
                (Some(c), None) if c.trim().is_empty() => {
                    return Err(ConfigError::invalid(
                        file,
                        &key("command"),
                        "is empty".into(),
                    ));
                }
                (None, Some(url)) => super::validate::check_http_url(url)
                    .map_err(|e| ConfigError::invalid(file, &key("url"), e))?,
                _ => {}
            }
            if server.command.is_none() {
                for (k, set) in [
                    ("args", !server.args.is_empty()),
                    ("env", !server.env.is_empty()),
                    ("cwd", server.cwd.is_some()),
                ] {
                    if set {
                        return Err(ConfigError::invalid(
                            file,
                            &key(k),
                            "is for stdio servers (`command`), not `url`".into(),
                        ));
                    }
                }
            } else if !server.headers.is_empty() || server.bearer_token_env.is_some() {
                return Err(ConfigError::invalid(
                    file,
                    &key("headers"),
                    "`headers` and `bearer_token_env` are for `url` servers".into(),
                ));
            }
            for (k, v) in [
                ("timeout_secs", server.timeout_secs),
                ("connect_timeout_secs", server.connect_timeout_secs),
            ] {
                if v == 0 {
                    return Err(ConfigError::invalid(
                        file,
                        &key(k),
                        "must be at least 1".into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Credentials in the section: header values and environment values whose name says so.
    pub fn secrets(&self) -> Vec<&str> {
        let mut out = Vec::new();
        if !self.serve.token.is_empty() {
            out.push(self.serve.token.expose());
        }
        for server in self.servers.values() {
            out.extend(server.headers.values().map(String::as_str));
            out.extend(
                server
                    .env
                    .iter()
                    .filter(|(k, _)| super::names_a_credential(k))
                    .map(|(_, v)| v.as_str()),
            );
        }
        out
    }
}
