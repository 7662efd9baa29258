//! The MCP implementations the tests use, none of them ours (installed by `.ci/mcp-tools`):
//! the Python SDK's venv and its scripts in `tests/mcp/`, the npm reference server, and a
//! driver for the Python SDK's client (`tests/mcp/client.py`) talking to hermes.

use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::WAIT;
use super::daemon::{World, binary};

/// Where `.ci/mcp-tools` installs the implementations.
fn prefix() -> PathBuf {
    PathBuf::from(std::env::var("HERMES_MCP_PREFIX").unwrap_or_else(|_| "/opt".into()))
}

/// The venv's Python, with the `mcp` SDK.
pub fn python() -> PathBuf {
    let py = prefix().join("hermes-mcp-venv/bin/python");
    assert!(
        py.is_file(),
        "the MCP Python SDK is missing: run .ci/mcp-tools (it installs {})",
        py.display()
    );
    py
}

/// `@modelcontextprotocol/server-everything`'s entry point.
pub fn everything() -> PathBuf {
    let js = prefix()
        .join("hermes-mcp-npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        js.is_file(),
        "@modelcontextprotocol/server-everything is missing: run .ci/mcp-tools"
    );
    js
}

/// A script of `tests/mcp/`.
pub fn script(name: &str) -> String {
    format!("{}/tests/mcp/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The Python SDK's client, connected to hermes, driven one call at a time.
pub struct Client {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// The tools it was offered.
    pub tools: Vec<String>,
}

impl Client {
    /// `hermes mcp serve` over stdio, started by the client with `w`'s environment.
    pub async fn stdio(w: &World) -> Client {
        let mut cmd = w.command_for(&python());
        cmd.args([&script("client.py"), "stdio", &binary(), "mcp", "serve"]);
        Client::start(cmd).await
    }

    /// Streamable HTTP at `url` with `token`.
    pub async fn http(w: &World, url: &str, token: &str) -> Client {
        let mut cmd = w.command_for(&python());
        cmd.args([&script("client.py"), "http", url, token]);
        Client::start(cmd).await
    }

    async fn start(cmd: std::process::Command) -> Client {
        let mut cmd = tokio::process::Command::from(cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("start the MCP client");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut client = Client {
            _child: child,
            stdin,
            lines,
            tools: Vec::new(),
        };
        let first = client.line().await;
        client.tools = serde_json::from_value(first["tools"].clone()).expect("the tool list");
        client
    }

    async fn line(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("the MCP client answers in time")
            .expect("read the MCP client")
            .expect("the MCP client ended early (its error is above)");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Call `tool`: `{"isError", "text", "structured"}`.
    pub async fn call(&mut self, tool: &str, args: Value) -> Value {
        let mut line = serde_json::json!({"tool": tool, "args": args}).to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .expect("write to the MCP client");
        self.line().await
    }

    /// Call `tool` and return its structured answer, failing on an error result.
    pub async fn ok(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args).await;
        assert_eq!(r["isError"], false, "{tool} failed: {r}");
        r["structured"].clone()
    }
}
