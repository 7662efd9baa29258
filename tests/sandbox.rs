//! The terminal in bubblewrap, through the real binary: the command writes in its person's
//! workspace but cannot read the daemon's database, another person's workspace, a home or the
//! shadow file, cannot write outside the workspace or reach a server on 127.0.0.1, and what it
//! leaves running (`setsid … &`) is gone when the call ends; the daemon keeps answering.
//!
//! Needs Debian's `bubblewrap` (`.ci/run` installs it); without it these tests fail saying so.

use crate::support;

use std::time::Duration;

use support::WAIT;
use support::daemon::{ALICE, BOB, World};
use support::llm::Reply;
use support::sandboxed::{model_port, processes_counted, running, still_answers, wait_gone};

/// Alice and Bob are people, not operators, allowed to run commands without being asked.
const CONFIG: &str = "[policy]\nlevel = \"full-access\"\nmax_level = \"full-access\"\n\n\
                      [tools.sandbox]\nbackend = \"bwrap\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_command_keeps_to_its_workspace_and_leaves_nothing_behind() {
    assert!(
        std::path::Path::new("/usr/bin/bwrap").exists(),
        "bubblewrap is not installed: run .ci/run (or apt-get install bubblewrap)"
    );
    let mut w = World::new(CONFIG).await;
    w.llm.echo_tool_results();
    let home = w.home.path().display().to_string();
    let port = model_port(&w);
    let bobs = w.workspace_of("telegram", &BOB.to_string());
    std::fs::write(bobs.join("diary.txt"), "bob's secret").unwrap();
    let bobs = bobs.display();
    let command = format!(
        "echo written > mine.txt && cat mine.txt; head -c 16 {home}/hermes.db; ls /root/.cargo; \
         cat {bobs}/diary.txt; cat ../222/diary.txt; ls {home}/workspace/telegram; \
         grep -c root: /etc/shadow; echo x > /usr/local/hermes-outside; \
         curl -sS -m 3 http://127.0.0.1:{port}/ ; setsid sleep 4321.5 & echo spawned; echo done"
    );
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({ "command": command }),
    ));
    w.llm.push(Reply::tool_call(
        "read_file",
        serde_json::json!({ "path": "../222/diary.txt" }),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "try things");
    // What the command printed, as the model received it (before any scrubbing of replies).
    let seen = w.llm.tool_output_seen_by(2, WAIT).await;
    assert!(
        seen.contains("written") && seen.contains("spawned") && seen.contains("done"),
        "{seen}"
    );
    assert!(
        w.workspace_of("telegram", &ALICE.to_string())
            .join("mine.txt")
            .exists(),
        "the workspace is Alice's own:\n{seen}"
    );
    assert!(
        !seen.contains("bob's secret"),
        "Bob's workspace was read:\n{seen}"
    );
    assert!(
        !seen.contains("\n222\n"),
        "the other workspaces were listed:\n{seen}"
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
    // The file tools keep to the same workspace.
    let read = w.llm.tool_output_seen_by(3, WAIT).await;
    assert!(
        read.contains("outside the workspace") && !read.contains("bob's secret"),
        "{read}"
    );
    // What it left running ended with the call.
    wait_gone("4321.5", "the setsid child").await;
    // And the daemon still answers (after the answer to the command went out, so that the next
    // message does not interrupt it).
    still_answers(&w, 1).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_and_a_huge_write_are_stopped_and_the_daemon_keeps_answering() {
    // Only ever inside the limited sandbox: 64 processes, files of 50 MB, a /tmp of 64 MB.
    let config = format!(
        "{CONFIG}max_processes = 64\nmax_file_mb = 50\ntmp_mb = 64\ncpu_secs = 60\nmemory_mb = 1024\n"
    );
    let mut w = World::new(&config).await;
    let (_, out, err) = w.run(&["doctor"]);
    assert!(
        format!("{out}{err}").contains("a pids cgroup per command"),
        "the process limit needs a pids cgroup here (the daemon runs as root): {out}{err}"
    );
    w.llm.echo_tool_results();
    // The sleep starts before the bomb, so that the count after it needs no fork.
    let bomb = "sleep 3 & s=$!; f() { f | f & }; f & wait $s; set -- /proc/[0-9]*; \
                echo processes=$#";
    let write = "dd if=/dev/zero of=big bs=1M count=10240 2>&1 | tail -1; ls -l big; \
                 head -c 40000000 /dev/zero > /tmp/a && echo first-tmp-ok; \
                 head -c 40000000 /dev/zero > /tmp/b || echo second-tmp-refused";
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({ "command": bomb, "timeout_secs": 30 }),
    ));
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({ "command": write, "timeout_secs": 60 }),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "try the limits");
    let bombed = w.llm.tool_output_seen_by(2, WAIT).await;
    let count = processes_counted(&bombed);
    // It ran into the limit (forks refused), and never had more than 64 processes. (How many
    // are left when it is counted depends on how fast the shells gave up.)
    assert!(
        count <= 64 && bombed.contains("Cannot fork"),
        "the bomb ran into the limit of 64: {count}\n{bombed}"
    );
    let wrote = w.llm.tool_output_seen_by(3, Duration::from_secs(90)).await;
    let big = w.workspace_of("telegram", &ALICE.to_string()).join("big");
    assert_eq!(
        std::fs::metadata(&big).unwrap().len(),
        50 * 1024 * 1024,
        "the file stopped at max_file_mb:\n{wrote}"
    );
    assert!(
        wrote.contains("first-tmp-ok") && wrote.contains("second-tmp-refused"),
        "/tmp is 64 MB:\n{wrote}"
    );
    assert!(wrote.contains("No space left on device"), "{wrote}");
    // Nothing of the bomb is left on the host, and the daemon answers.
    assert!(running("f | f").is_empty());
    still_answers(&w, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --run-ignored only --no-capture"]
async fn call_cost_on_the_host_and_in_bubblewrap() {
    for backend in [
        hermes::config::SandboxBackend::None,
        hermes::config::SandboxBackend::Bwrap,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = hermes::tools::terminal::TerminalSettings::new(dir.path());
        settings.sandbox.backend = backend;
        let (median, min) = support::cost::call_cost(settings, 30).await;
        println!("terminal `true` via {backend:?}: median {median:?}, min {min:?} (30 calls)");
    }
}
