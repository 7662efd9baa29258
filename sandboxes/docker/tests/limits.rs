//! The cgroup limits against a real dockerd: a fork bomb, pids held past the timeout, memory
//! beyond the limit and a /tmp filled up. Each runs inside a limited container only, and the
//! container must answer the next call.

mod support;

use std::time::{Duration, Instant};

use hermes_docker::Docker;
use support::{Session, call, run};
use tokio_util::sync::CancellationToken;

/// The container answers, and only its keeper is left in it.
async fn assert_usable_and_clean(docker: &Docker, id: &str) {
    let done = run(docker, id, "echo ok; ps -o args | grep -c '^sleep 1000'").await;
    assert_eq!(done.output, "ok\n0\n", "no sleep 1000 is left");
}

#[tokio::test]
async fn a_fork_bomb_hits_the_pids_limit_and_the_container_survives() {
    let (_daemon, docker) = docker_or_skip!();
    let session = Session::new("limits-bomb", "s");
    let id = docker.ensure(&session.spec).await.unwrap();
    let limit = run(
        &docker,
        &id,
        "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max",
    )
    .await;
    assert_eq!(limit.output, "64\n");

    // `:(){ :|:& };:` does not bomb in busybox sh (the special builtin `:` wins over a
    // function of that name), so the function gets a plain name. The calling shell stays until
    // the cgroup has refused a fork (builtins only: `read` and `[` need no pid), or until the
    // timeout; had it returned at once, the end-of-call kill could stop the bomb before it
    // reached the limit (it did, once, on a fast machine).
    let mut bomb = call(
        "f=/sys/fs/cgroup/pids/pids.events; [ -e $f ] || f=/sys/fs/cgroup/pids.events; \
         b() { b | b & }; b; \
         until read -r k n < $f && [ \"$n\" != 0 ]; do :; done; echo limit reached",
    );
    bomb.timeout = Duration::from_secs(20);
    let started = Instant::now();
    let done = docker
        .exec(&id, bomb, &CancellationToken::new())
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // The cgroup counts the forks it refused at the limit.
    let events = run(
        &docker,
        &id,
        "cat /sys/fs/cgroup/pids/pids.events 2>/dev/null || cat /sys/fs/cgroup/pids.events",
    )
    .await;
    let refused: u64 = events
        .output
        .trim()
        .strip_prefix("max ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("pids.events: {:?} (bomb: {done:?})", events.output));
    assert!(refused > 0, "the bomb never reached the limit: {done:?}");
    // The calling shell either saw the refusal or was itself refused a fork (and ended); it
    // never waited out the timeout.
    assert!(!done.timed_out, "{done:?}");
    assert_usable_and_clean(&docker, &id).await;
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn processes_holding_every_pid_past_the_timeout_are_ended() {
    let (_daemon, docker) = docker_or_skip!();
    let session = Session::new("limits-hold", "s");
    let id = docker.ensure(&session.spec).await.unwrap();
    // A subshell takes every free pid with sleeps, and the command spins on builtins until the
    // timeout, so the end-of-call kill needs an exec of its own. (busybox's subshell exits at
    // its failed fork and so frees one pid for it; the restart fallback for a container with
    // no pid at all is not reached this way.)
    let mut hold = call("(while :; do sleep 1000 & done) 2>/dev/null & while :; do :; done");
    hold.timeout = Duration::from_secs(3);
    let done = docker
        .exec(&id, hold, &CancellationToken::new())
        .await
        .unwrap();
    assert!(done.timed_out && done.stopped_leftovers, "{done:?}");
    assert_usable_and_clean(&docker, &id).await;
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn memory_beyond_the_limit_is_refused_and_the_next_call_works() {
    let (_daemon, docker) = docker_or_skip!();
    let session = Session::new("limits-memory", "s");
    let id = docker.ensure(&session.spec).await.unwrap();

    // `tail` of a stream without newlines keeps it all in memory: 600 MiB against 256.
    let mut hog = call("head -c 600m /dev/zero | tail > /dev/null; echo \"tail: $?\"");
    hog.timeout = Duration::from_secs(60);
    let done = docker
        .exec(&id, hog, &CancellationToken::new())
        .await
        .unwrap();
    assert!(!done.timed_out, "{done:?}");
    assert!(
        done.output.contains("tail: 137"),
        "tail was killed: {}",
        done.output
    );

    // tmpfs pages count against memory too; /tmp is capped below the limit.
    let fill = run(&docker, &id, "dd if=/dev/zero of=/tmp/big bs=1M count=400").await;
    assert_ne!(fill.exit_code, Some(0));
    assert!(
        fill.output.contains("No space left on device"),
        "{}",
        fill.output
    );
    let size = run(&docker, &id, "du -m /tmp/big | cut -f1; rm /tmp/big").await;
    let mib: u64 = size.output.trim().parse().expect("a size");
    assert!((100..=128).contains(&mib), "/tmp held {mib} MiB");

    assert_usable_and_clean(&docker, &id).await;
    assert_eq!(
        docker.ensure(&session.spec).await.unwrap(),
        id,
        "still the same container"
    );
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn a_container_that_died_is_replaced_or_restarted_by_ensure() {
    let (daemon, docker) = docker_or_skip!();
    let session = Session::new("limits-died", "s");
    let id = docker.ensure(&session.spec).await.unwrap();
    // As if the kernel had killed PID 1 (an OOM kill of the keeper).
    daemon.api().await.kill_container(&id, None).await.unwrap();
    let again = docker.ensure(&session.spec).await.unwrap();
    assert_eq!(run(&docker, &again, "echo back").await.output, "back\n");
    docker.remove(&again).await.unwrap();
}
