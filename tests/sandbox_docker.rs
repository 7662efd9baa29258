//! The terminal in a Docker container per session, through the real binary against a real
//! `dockerd` (no network of its own, a busybox image imported from a tarball): the command
//! writes in its person's workspace but reaches nothing of the daemon's or of other people's,
//! cannot write outside the workspace or reach a server on 127.0.0.1, leaves nothing running,
//! is stopped by its limits (a fork bomb, a 10 GB write) while the daemon keeps answering; the
//! container goes when the session goes idle, `hermes status` lists it, and a crash's leftovers
//! are reaped at the next start.
//!
//! Needs Debian's `docker.io` and `busybox-static` (`.ci/test` installs them).

use crate::support;

use std::time::Duration;

use support::WAIT;
use support::daemon::{ALICE, BOB, World};
use support::dockerd::{Dockerd, IMAGE};
use support::llm::Reply;
use support::sandboxed::{model_port, processes_counted, still_answers, wait_gone, wait_until};

fn config(docker: &Dockerd, extra: &str) -> String {
    format!(
        "[policy]\nlevel = \"full-access\"\nmax_level = \"full-access\"\n\n{extra}\
         [tools.sandbox]\nbackend = \"docker\"\nmax_processes = 64\nmax_file_mb = 50\n\
         memory_mb = 256\n\n[tools.sandbox.docker]\nsocket = \"{}\"\nimage = \"{IMAGE}\"\n",
        docker.socket().display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_keeps_to_its_workspace_its_limits_and_leaves_nothing_behind() {
    let docker = Dockerd::start();
    let mut w = World::new(&config(&docker, "")).await;
    w.llm.echo_tool_results();
    let home = w.home.path().display().to_string();
    let bobs = w.workspace_of("telegram", &BOB.to_string());
    std::fs::write(bobs.join("diary.txt"), "bob's secret").unwrap();
    let port = model_port(&w);
    let command = format!(
        "echo written > mine.txt && cat mine.txt; cat {home}/hermes.db; cat {}/diary.txt; \
         ls /workspace/..; echo x > /etc/hermes-outside; \
         wget -q -T 3 -O- http://127.0.0.1:{port}/ || echo no-network; \
         setsid sleep 4545.5 & echo spawned",
        bobs.display()
    );
    // The sleep starts before the bomb, so that the count after it needs no fork.
    let bomb = "sleep 3 & s=$!; b() { b | b & }; b & wait $s; set -- /proc/[0-9]*; \
                echo processes=$#";
    let write = "dd if=/dev/zero of=big bs=1M count=10240 2>&1 | tail -1; ls -l big";
    for (command, timeout) in [(command.as_str(), 30), (bomb, 20), (write, 60)] {
        w.llm.push(Reply::tool_call(
            "terminal",
            serde_json::json!({ "command": command, "timeout_secs": timeout }),
        ));
    }
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "try things");
    let seen = w.llm.tool_output_seen_by(2, WAIT).await;
    let alices = w.workspace_of("telegram", &ALICE.to_string());
    assert!(
        seen.contains("written") && seen.contains("spawned"),
        "{seen}"
    );
    assert!(alices.join("mine.txt").exists(), "{seen}");
    assert!(
        !seen.contains("SQLite format") && !seen.contains("bob's secret"),
        "{seen}"
    );
    assert!(seen.contains("Read-only file system"), "{seen}");
    assert!(seen.contains("no-network"), "{seen}");
    wait_gone("4545.5", "the setsid child").await;
    // The bomb hits the pids limit and the call ends; the 10 GB write stops at max_file_mb.
    let bombed = w.llm.tool_output_seen_by(3, Duration::from_secs(60)).await;
    let count = processes_counted(&bombed);
    assert!(
        (1..=64).contains(&count),
        "the pids limit of 64: {count}\n{bombed}"
    );
    let name = docker.containers()[0]
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let limits = docker.cli(&[
        "inspect",
        "-f",
        "{{.HostConfig.PidsLimit}} {{.HostConfig.NetworkMode}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}}",
        &name,
    ]);
    assert_eq!(
        String::from_utf8_lossy(&limits.stdout).trim(),
        "64 none true [ALL]"
    );
    let wrote = w.llm.tool_output_seen_by(4, Duration::from_secs(90)).await;
    assert_eq!(
        std::fs::metadata(alices.join("big")).unwrap().len(),
        50 * 1024 * 1024,
        "{wrote}"
    );
    still_answers(&w, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_are_listed_go_with_idle_sessions_and_are_reaped_at_start() {
    let docker = Dockerd::start();
    // A lane retires after 1.2 s idle.
    let mut w = World::new(&config(
        &docker,
        "[gateway]\nsession_idle_minutes = 0.02\n\n",
    ))
    .await;
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({"command": "echo one"}),
    ));
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "one");
    let seen = w.llm.tool_output_seen_by(2, WAIT).await;
    assert!(seen.contains("one"), "{seen}");
    assert_eq!(docker.containers().len(), 1, "{:?}", docker.containers());
    let (_, out, err) = w.run(&["status"]);
    assert!(out.contains("container: hermes-"), "{out}{err}");
    assert!(out.contains("terminal:  docker"), "{out}{err}");
    // Idle: the lane retires and its container goes.
    wait_until("the idle session's container removed", || {
        docker.containers().is_empty()
    })
    .await;
    // A crash leaves one behind; the next start reaps it.
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({"command": "echo two"}),
    ));
    w.tg.private_text(ALICE, "Alice", "two");
    w.llm.tool_output_seen_by(4, WAIT).await;
    assert_eq!(docker.containers().len(), 1);
    daemon.kill();
    assert_eq!(docker.containers().len(), 1, "left by the crash");
    let _daemon = w.start().await;
    wait_until("the crash's container reaped", || {
        docker.containers().is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --run-ignored only --no-capture"]
async fn call_cost_in_docker() {
    let docker = Dockerd::start();
    let dir = tempfile::tempdir().unwrap();
    let mut settings = hermes::tools::terminal::TerminalSettings::new(dir.path());
    settings.hermes_home = Some(dir.path().join("home"));
    settings.sandbox.backend = hermes::config::SandboxBackend::Docker;
    settings.sandbox.docker.socket = Some(docker.socket());
    settings.sandbox.docker.image = IMAGE.into();
    let (median, min) = support::cost::call_cost(settings, 30).await;
    println!("terminal `true` via docker: median {median:?}, min {min:?} (30 calls)");
}
