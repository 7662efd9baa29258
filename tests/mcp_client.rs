//! The agent using MCP servers nobody here wrote, through the real binary and the fake
//! Telegram: a FastMCP server of the Python SDK (`mcp` from PyPI, `tests/mcp/server.py`) over
//! stdio and over Streamable HTTP, and the reference server `@modelcontextprotocol/server-
//! everything` (npm) over stdio. A read-only tool runs at `auto` without asking, a destructive
//! one asks; the server's errors and a hung call reach the model as errors and the lane goes on;
//! a server killed mid-session is restarted and the next call works; its processes end with
//! the daemon, even a SIGKILLed one.
//!
//! Needs `.ci/mcp-tools` (the venv and the npm package); without them these tests fail saying
//! so.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::daemon::{ALICE, World};
use support::llm::Reply;
use support::mcp::{everything, python, script};
use support::sandboxed::{alive, rss_kib};
use support::{Buttons, WAIT, wait_for};

fn server_script() -> String {
    script("server.py")
}

/// A stdio section for the FastMCP server, named `py`.
fn stdio_config(extra: &str) -> String {
    format!(
        "[mcp.servers.py]\ncommand = \"{}\"\nargs = [\"{}\"]\nenv = {{ GREETING = \"hello\" }}\n\
         timeout_secs = 3\n{extra}",
        python().display(),
        server_script()
    )
}

/// The `n`th message the bot sent (from 1), waiting for it.
async fn sent(w: &World, n: usize) -> String {
    w.tg.wait_sent(n, WAIT).await[n - 1].visible_text.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fastmcp_over_stdio_read_runs_destructive_asks_errors_and_hangs_are_told() {
    let mut w = World::new(&stdio_config("")).await;
    w.llm.echo_tool_results();
    let _daemon = w.start_logging("MCP server connected").await;

    w.llm
        .push(Reply::tool_call("mcp_py_add", json!({"a": 2, "b": 3})));
    w.tg.private_text(ALICE, "Alice", "add them");
    let first = sent(&w, 1).await;
    assert!(
        first.contains("sum=5"),
        "a read-only tool runs at once: {first}"
    );
    let offered = w.llm.requests()[0].tool_names();
    for name in ["mcp_py_add", "mcp_py_wipe", "mcp_py_whoami"] {
        assert!(offered.iter().any(|n| n == name), "{name} in {offered:?}");
    }

    w.llm
        .push(Reply::tool_call("mcp_py_wipe", json!({"target": "/srv"})));
    w.tg.private_text(ALICE, "Alice", "wipe it");
    let ask = w.tg.wait_sent(2, WAIT).await.remove(1);
    assert!(
        ask.visible_text.contains("Permission needed: mcp_py_wipe"),
        "a destructive tool asks: {}",
        ask.visible_text
    );
    w.tg.callback_query(ALICE, ALICE, ask.message_id, &ask.button("Allow once"));
    let wiped = sent(&w, 3).await;
    assert!(wiped.contains("wiped /srv"), "{wiped}");

    // The server's environment is its own: no daemon credential, its `env` given.
    w.llm.push(Reply::tool_call("mcp_py_whoami", json!({})));
    w.tg.private_text(ALICE, "Alice", "who are you");
    let who = sent(&w, 4).await;
    assert!(who.contains("token=none greeting=hello"), "{who}");

    // An error of the server, and a call that never answers: both reach the model as errors.
    w.llm.push(Reply::tool_calls(vec![
        ("mcp_py_fail", json!({})),
        ("mcp_py_hang", json!({})),
    ]));
    w.llm.set_default(|req| {
        let results: Vec<String> = req.tool_results().into_iter().map(|(_, t)| t).collect();
        Reply::text(format!("tools said: {}", results.join(" | ")))
    });
    w.tg.private_text(ALICE, "Alice", "try the broken ones");
    let told = sent(&w, 5).await;
    assert!(told.contains("the city is unknown"), "{told}");
    assert!(
        told.contains("did not answer within 3 s"),
        "the hung call timed out: {told}"
    );
    // The lane answers the next message.
    w.llm.push(Reply::text("still here"));
    w.tg.private_text(ALICE, "Alice", "hello?");
    assert!(sent(&w, 6).await.contains("still here"));
    // `/status` and `hermes status` show the server.
    w.tg.private_text(ALICE, "Alice", "/status");
    let status = sent(&w, 7).await;
    assert!(status.contains("MCP py: connected, 6 tools"), "{status}");
    let (_, out, err) = w.run(&["status"]);
    assert!(
        out.contains("mcp:       py connected, 6 tools"),
        "{out}{err}"
    );
    let (_, out, err) = w.run(&["mcp", "list"]);
    assert!(out.contains("py  connected, 6 tools"), "{out}{err}");
    // `hermes mcp test` connects on its own and shows what the model gets.
    let (code, out, err) = w.run(&["mcp", "test", "py"]);
    assert!(code.success(), "{out}{err}");
    assert!(
        out.contains("py: connected, 6 tools")
            && out.contains("mcp_py_add  [read]")
            && out.contains("mcp_py_wipe  [system]"),
        "{out}{err}"
    );
    let (code, _, err) = w.run(&["mcp", "test", "nope"]);
    assert!(
        !code.success() && err.contains("no MCP server `nope`"),
        "{err}"
    );
}

/// The pid the FastMCP server reports.
fn pid_in(text: &str) -> i32 {
    text.split("pid=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_restarted_and_no_server_outlives_the_daemon() {
    let mut w = World::new(&stdio_config("")).await;
    w.llm.echo_tool_results();
    let mut daemon = w.start_logging("MCP server connected").await;
    w.llm.push(Reply::tool_call("mcp_py_whoami", json!({})));
    w.tg.private_text(ALICE, "Alice", "who are you");
    let first = pid_in(&sent(&w, 1).await);
    // SAFETY: kill(2) of the server the daemon started.
    unsafe { libc::kill(first, libc::SIGKILL) };
    wait_for(
        WAIT,
        "the killed server gone",
        || (!alive(first)).then_some(()),
        || format!("pid {first} still alive"),
    )
    .await;
    w.llm.push(Reply::tool_call("mcp_py_whoami", json!({})));
    w.tg.private_text(ALICE, "Alice", "and now?");
    let again = sent(&w, 2).await;
    let second = pid_in(&again);
    assert_ne!(first, second, "a new server answers: {again}");

    // SIGKILL the daemon: its server goes with it.
    daemon.kill();
    wait_for(
        Duration::from_secs(10),
        "the server gone with the daemon",
        || (!alive(second)).then_some(()),
        || format!("pid {second} outlived the daemon"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fastmcp_over_streamable_http_with_a_bearer_token() {
    let port = support::http::free_port();
    let mut server = std::process::Command::new(python())
        .args([&server_script(), "http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the FastMCP HTTP server");
    wait_for(
        WAIT,
        "the FastMCP HTTP server",
        || {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(|_| ())
        },
        || format!("nothing on port {port}"),
    )
    .await;
    let mut w = World::new(&format!(
        "[mcp.servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
         bearer_token_env = \"MCP_TEST_TOKEN\"\nheaders = {{ X-Team = \"blue\" }}\n"
    ))
    .await;
    w.set_env("MCP_TEST_TOKEN", "mcp-token-0123456789");
    w.llm.echo_tool_results();
    let _daemon = w.start_logging("MCP server connected").await;
    w.llm
        .push(Reply::tool_call("mcp_web_add", json!({"a": 3, "b": 4})));
    w.tg.private_text(ALICE, "Alice", "add over http");
    let answer = sent(&w, 1).await;
    assert!(answer.contains("sum=7"), "{answer}");
    let _ = server.kill();
    let _ = server.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_everything_server_over_stdio() {
    let mut w = World::new(&format!(
        "[mcp.servers.everything]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\n\
         exclude_tools = [\"trigger-long-running-operation\"]\n",
        everything().display()
    ))
    .await;
    w.llm.echo_tool_results();
    let _daemon = w.start_logging("MCP server connected").await;
    w.llm.push(Reply::tool_call(
        "mcp_everything_echo",
        json!({"message": "hi from hermes"}),
    ));
    w.tg.private_text(ALICE, "Alice", "echo");
    let echoed = sent(&w, 1).await;
    assert!(echoed.contains("Echo: hi from hermes"), "{echoed}");
    let offered = w.llm.requests()[0].tool_names();
    assert!(
        offered.iter().any(|n| n == "mcp_everything_get-sum"),
        "{offered:?}"
    );
    assert!(
        !offered.iter().any(|n| n.contains("long-running")),
        "exclude_tools: {offered:?}"
    );
    // An image the model cannot see is named, not dropped.
    w.llm
        .push(Reply::tool_call("mcp_everything_get-tiny-image", json!({})));
    w.tg.private_text(ALICE, "Alice", "a picture");
    let image = sent(&w, 2).await;
    assert!(image.contains("an image (image/png"), "{image}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_reaches_new_sessions_and_a_running_one_keeps_its_own() {
    let mut w = World::new(&stdio_config("")).await;
    w.llm.echo_tool_results();
    let _daemon = w.start_logging("MCP server connected").await;
    w.llm.push(Reply::tool_call("mcp_py_grow", json!({})));
    w.tg.private_text(ALICE, "Alice", "grow");
    assert!(sent(&w, 1).await.contains("grown"));
    // The server's notifications/tools/list_changed makes the daemon list again.
    wait_for(
        WAIT,
        "the grown tool list",
        || {
            let (_, out, _) = w.run(&["status"]);
            out.contains("py connected, 7 tools").then_some(())
        },
        || w.run(&["status"]).1,
    )
    .await;
    // The running session keeps the list it started with (a stable prompt prefix)…
    w.llm.push(Reply::text("same tools"));
    w.tg.private_text(ALICE, "Alice", "anything new?");
    assert!(sent(&w, 2).await.contains("same tools"));
    let names = w.llm.requests()[2].tool_names();
    assert!(!names.iter().any(|n| n == "mcp_py_extra"), "{names:?}");
    // …and a new one gets the new tool.
    w.tg.private_text(ALICE, "Alice", "/new");
    w.tg.wait_sent(3, WAIT).await;
    w.llm.push(Reply::tool_call("mcp_py_extra", json!({})));
    w.tg.private_text(ALICE, "Alice", "use the new one");
    let extra = sent(&w, 4).await;
    assert!(extra.contains("extra here"), "{extra}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_adds_and_removes_a_server() {
    let mut w = World::new("").await;
    w.llm.echo_tool_results();
    let daemon = w.start().await;
    w.llm.push(Reply::text("no tools yet"));
    w.tg.private_text(ALICE, "Alice", "hi");
    assert!(sent(&w, 1).await.contains("no tools yet"));
    let config = w.home.path().join("config.toml");
    std::fs::write(&config, stdio_config("")).unwrap();
    let before = daemon.log().matches("MCP server connected").count();
    daemon.signal(libc::SIGHUP);
    daemon
        .wait_log("MCP server connected", before + 1, WAIT)
        .await;
    // The session had no MCP tools to keep: its next turn takes the new server's.
    w.llm.push(Reply::tool_call("mcp_py_whoami", json!({})));
    w.tg.private_text(ALICE, "Alice", "who serves you now?");
    let who = sent(&w, 2).await;
    let pid = pid_in(&who);
    // Removed from the configuration: the server stops.
    std::fs::write(&config, "").unwrap();
    daemon.signal(libc::SIGHUP);
    wait_for(
        WAIT,
        "the removed server gone",
        || (!alive(pid)).then_some(()),
        || format!("pid {pid} still alive"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_reported_and_the_others_serve() {
    let config = format!(
        "{}[mcp.servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
        stdio_config("")
    );
    let mut w = World::new(&config).await;
    w.llm.echo_tool_results();
    let daemon = w.start_logging("MCP server connected").await;
    daemon
        .wait_log("MCP server not connected; retrying", 1, WAIT)
        .await;
    w.llm
        .push(Reply::tool_call("mcp_py_add", json!({"a": 20, "b": 22})));
    w.tg.private_text(ALICE, "Alice", "add");
    assert!(sent(&w, 1).await.contains("sum=42"));
    let (_, out, err) = w.run(&["status"]);
    assert!(
        out.contains("mcp:       broken failed (cannot start `/nonexistent/mcp-server`")
            && out.contains("mcp:       py connected, 6 tools"),
        "{out}{err}"
    );
    let metrics = w.metrics().await;
    for line in [
        "hermes_mcp_server_up{server=\"py\"} 1",
        "hermes_mcp_server_up{server=\"broken\"} 0",
        "hermes_mcp_server_tools{server=\"py\"} 6",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
}

/// Measurements for the closing note, not a check: spawn to first poll with no MCP server and
/// with three, and what the daemon's own memory grows by per connected server. Run with
/// `cargo nextest run -E 'test(/^mcp_client::.*mcp_cost/)' --run-ignored only --no-capture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, run by hand"]
async fn mcp_cost() {
    let three = format!(
        "{}{}{}",
        stdio_config("").replace("servers.py]", "servers.a]"),
        stdio_config("").replace("servers.py]", "servers.b]"),
        stdio_config("").replace("servers.py]", "servers.c]"),
    );
    for (label, config, servers) in [("none", String::new(), 0), ("three", three, 3)] {
        let mut polls = Vec::new();
        let mut rss = Vec::new();
        for _ in 0..5 {
            let mut w = World::new(&config).await;
            let t0 = std::time::Instant::now();
            let daemon = w.start().await;
            let first = w.tg.calls_of("getupdates")[0].at;
            polls.push(first.saturating_duration_since(t0).as_secs_f64() * 1e3);
            if servers > 0 {
                daemon.wait_log("MCP server connected", servers, WAIT).await;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
            rss.push(rss_kib(daemon.pid()));
        }
        polls.sort_by(f64::total_cmp);
        rss.sort_unstable();
        println!(
            "mcp_cost {label}: first poll median {:.1} ms (of {:?}), daemon RSS median {} KiB",
            polls[2], polls, rss[2]
        );
    }
}
