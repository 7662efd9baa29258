//! How hermes reaches an MCP server: a child process on stdio, or Streamable HTTP.
//!
//! A stdio server gets a clean environment (`PATH`, `HOME`, `LANG`, `TMPDIR` and its own
//! `env`, never the daemon's credentials), leads a process group of its own (killed whole when
//! it ends), dies with the daemon (`PR_SET_PDEATHSIG`), and carries the daemon's marker so that
//! anything it left behind after a crash is found at the next start. Its standard error goes to
//! the log.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;

use crate::config::{EnvSource, McpServerConfig, ProcessEnv};

/// The variables of the daemon's own environment a stdio server gets.
const PASSED: &[&str] = &[
    "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "LOGNAME",
];

/// Start the stdio server of `name`; its process id comes along.
pub fn stdio(
    name: &str,
    command: &str,
    config: &McpServerConfig,
    home: &Path,
    marker: &str,
) -> Result<(TokioChildProcess, Option<u32>), String> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&config.args).env_clear();
    for var in PASSED {
        if let Some(value) = ProcessEnv.var(var) {
            cmd.env(var, value);
        }
    }
    cmd.envs(&config.env)
        .env(crate::tools::terminal::CALL_MARKER, marker)
        .current_dir(config.cwd.as_deref().unwrap_or(home))
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: prctl(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!("cannot start `{command}`: {e} (mcp.servers.{name}.command; is it installed and in PATH?)")
        })?;
    let pid = transport.id();
    if let Some(stderr) = stderr {
        let server = name.to_owned();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %server, "MCP server says: {}", hermes_adapter::scrub(&line));
            }
        });
    }
    Ok((transport, pid))
}

/// The Streamable HTTP connection of `name`.
pub fn http(
    name: &str,
    config: &McpServerConfig,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let url = config.url.as_deref().unwrap_or_default();
    let mut c = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(var) = &config.bearer_token_env {
        let token = ProcessEnv.var(var).ok_or_else(|| {
            format!(
                "the environment variable {var} (mcp.servers.{name}.bearer_token_env) is not set"
            )
        })?;
        hermes_adapter::register_secret(&token);
        c = c.auth_header(token);
    }
    let mut headers = HashMap::new();
    for (k, v) in &config.headers {
        let key = HeaderName::try_from(k.as_str())
            .map_err(|e| format!("mcp.servers.{name}.headers: `{k}` is not a header name ({e})"))?;
        let value = HeaderValue::try_from(v.as_str())
            .map_err(|_| format!("mcp.servers.{name}.headers.{k}: not a valid header value"))?;
        headers.insert(key, value);
    }
    Ok(StreamableHttpClientTransport::from_config(
        c.custom_headers(headers),
    ))
}
