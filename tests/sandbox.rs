//! The terminal in bubblewrap, through the real binary: the command writes in the workspace but
//! cannot read the daemon's database, another home or the shadow file, cannot write outside the
//! workspace or reach a server on 127.0.0.1, and what it leaves running (`setsid … &`) is gone
//! when the call ends; the daemon keeps answering.
//!
//! Needs Debian's `bubblewrap` (`.ci/run` installs it); without it these tests fail saying so.

mod support;

use std::time::Duration;

use support::WAIT;
use support::daemon::{ALICE, World};
use support::llm::Reply;

const CONFIG: &str =
    "[access]\noperators = [\"telegram:111\"]\n\n[tools.sandbox]\nbackend = \"bwrap\"\n";

/// Processes on the host whose command line contains `needle`.
fn running(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle) && !c.contains("cmdline"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_command_keeps_to_its_workspace_and_leaves_nothing_behind() {
    assert!(
        std::path::Path::new("/usr/bin/bwrap").exists(),
        "bubblewrap is not installed: run .ci/run (or apt-get install bubblewrap)"
    );
    let mut w = World::new(CONFIG).await;
    w.llm.echo_tool_results();
    let home = w.home.path().display().to_string();
    let port = w
        .llm
        .base_url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/v1")
        .to_owned();
    let command = format!(
        "echo written > mine.txt && cat mine.txt; head -c 16 {home}/hermes.db; ls /root/.cargo; \
         grep -c root: /etc/shadow; echo x > /usr/local/hermes-outside; \
         curl -sS -m 3 http://127.0.0.1:{port}/ ; setsid sleep 4321.5 & echo spawned; echo done"
    );
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({ "command": command }),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "/permissions full-access");
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "try things");
    // What the command printed, as the model received it (before any scrubbing of replies).
    let seen = w.llm.tool_output_seen_by(2, WAIT).await;
    assert!(
        seen.contains("written") && seen.contains("spawned") && seen.contains("done"),
        "{seen}"
    );
    assert!(
        w.home.path().join("workspace/mine.txt").exists(),
        "the workspace is the real one:\n{seen}"
    );
    assert!(
        !seen.contains("SQLite format"),
        "the database was read:\n{seen}"
    );
    assert!(seen.contains("No such file or directory"), "{seen}");
    assert!(
        seen.contains("\n0\n") || !seen.contains("root:"),
        "the shadow file was read:\n{seen}"
    );
    assert!(seen.contains("Read-only file system"), "{seen}");
    assert!(!std::path::Path::new("/usr/local/hermes-outside").exists());
    assert!(seen.contains("curl: (7)"), "the network is off:\n{seen}");
    // What it left running ended with the call.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !running("4321.5").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "still running after the call: {:?}",
            running("4321.5")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // And the daemon still answers (after the answer to the command went out, so that the next
    // message does not interrupt it).
    w.tg.wait_sent(2, WAIT).await;
    w.llm.set_default(|_| Reply::text("still here"));
    w.tg.private_text(ALICE, "Alice", "ping");
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert!(
        sent.iter().any(|m| m.visible_text == "still here"),
        "{sent:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_which_sandbox_is_active() {
    let w = World::new(CONFIG).await;
    let (_, out, err) = w.run(&["doctor"]);
    let said = format!("{out}{err}");
    assert!(said.contains("terminal sandbox: bubblewrap"), "{said}");
    let w = World::new("[tools.sandbox]\nbackend = \"none\"\n").await;
    let (_, out, err) = w.run(&["doctor"]);
    let said = format!("{out}{err}");
    assert!(said.contains("terminal sandbox: NONE"), "{said}");
}
