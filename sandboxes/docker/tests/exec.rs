//! `exec` against a real dockerd: output and exit codes, the exact environment, the workspace
//! and the walls around it, time limits, cancellation, the output cap, and leftovers killed.

mod support;

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use hermes_docker::{Docker, ExecCall};
use support::{Session, call, run};
use tokio_util::sync::CancellationToken;

/// A running container for `instance`, its session (which owns the workspace) and the client.
async fn container(docker: &Docker, instance: &str) -> (String, Session) {
    let session = Session::new(instance, "s");
    let id = docker.ensure(&session.spec).await.expect("ensure");
    (id, session)
}

#[tokio::test]
async fn exit_code_and_interleaved_output_come_back() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-basic").await;
    let done = run(&docker, &id, "echo out; echo err >&2; exit 3").await;
    assert_eq!(done.exit_code, Some(3));
    assert_eq!(done.output, "out\nerr\n");
    assert!(!done.timed_out && !done.cancelled && !done.stopped_leftovers);
    assert_eq!(
        run(&docker, &id, "cat; echo closed").await.output,
        "closed\n"
    );
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn the_command_sees_exactly_the_given_environment() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-env").await;
    let mut call = call("env | grep -v '^PWD=\\|^SHLVL=' | sort");
    call.env = vec![
        ("PATH".into(), "/bin".into()),
        ("GREETING".into(), "hello world".into()),
        ("EMPTY".into(), String::new()),
    ];
    let done = docker
        .exec(&id, call, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(done.output, "EMPTY=\nGREETING=hello world\nPATH=/bin\n");
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn commands_run_in_the_workdir_and_write_the_workspace() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, session) = container(&docker, "exec-workspace").await;
    std::fs::create_dir(session.workspace.path().join("sub")).unwrap();
    let mut call = call("pwd; echo written > here.txt");
    call.workdir = "/workspace/sub";
    let done = docker
        .exec(&id, call, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(done.output, "/workspace/sub\n");
    let host_file = session.workspace.path().join("sub/here.txt");
    assert_eq!(std::fs::read_to_string(&host_file).unwrap(), "written\n");
    let workspace_owner = std::fs::metadata(session.workspace.path()).unwrap().uid();
    assert_eq!(
        std::fs::metadata(&host_file).unwrap().uid(),
        workspace_owner
    );
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn a_workspace_owned_by_another_user_is_written_as_that_user() {
    let (_daemon, docker) = docker_or_skip!();
    let session = Session::new("exec-owner", "s");
    let status = std::process::Command::new("chown")
        .arg("1234:1234")
        .arg(session.workspace.path())
        .status()
        .unwrap();
    assert!(status.success(), "chown (the tests run as root)");
    let id = docker.ensure(&session.spec).await.unwrap();
    let done = run(&docker, &id, "id -u; echo x > mine && echo wrote").await;
    assert_eq!(done.output, "1234\nwrote\n");
    let meta = std::fs::metadata(session.workspace.path().join("mine")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (1234, 1234));
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn everything_outside_the_workspace_and_tmp_is_read_only() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-readonly").await;
    for target in ["/etc/x", "/x", "/bin/x"] {
        let done = run(&docker, &id, &format!("echo x > {target}")).await;
        assert_ne!(done.exit_code, Some(0), "{target} was writable");
        assert!(
            done.output.contains("Read-only file system"),
            "{}",
            done.output
        );
    }
    let done = run(&docker, &id, "echo x > /tmp/x && cat /tmp/x").await;
    assert_eq!(done.output, "x\n", "/tmp is writable");
    let caps = run(&docker, &id, "grep CapEff /proc/self/status").await;
    assert_eq!(caps.output, "CapEff:\t0000000000000000\n");
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn there_is_no_network_not_even_to_the_host() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-network").await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    // The command must not reach it; prove the listener works from the host first.
    let mut probe = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    drop(
        listener
            .accept()
            .expect("the host reaches its own listener"),
    );
    let _ = probe.read(&mut [0u8; 1]);

    let command = format!("wget -q -T 3 -O - http://127.0.0.1:{port}/; echo rc=$?; ip -o link");
    let done = run(&docker, &id, &command).await;
    assert!(done.output.contains("rc=1"), "{}", done.output);
    assert!(
        !done.output.contains("eth0"),
        "no interface but lo: {}",
        done.output
    );
    assert!(
        listener.accept().is_err(),
        "nothing from the container reached the host"
    );
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn a_timeout_kills_the_command_quickly() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-timeout").await;
    let mut call = call("echo started; sleep 100");
    call.timeout = Duration::from_secs(1);
    let started = Instant::now();
    let done = docker
        .exec(&id, call, &CancellationToken::new())
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(done.timed_out && !done.cancelled);
    assert_eq!(done.exit_code, None);
    assert_eq!(done.output, "started\n");
    assert!(done.stopped_leftovers, "the sleep was killed");
    assert_no_sleep_left(&docker, &id).await;
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn cancelling_kills_the_command() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-cancel").await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let done = docker.exec(&id, call("sleep 100"), &cancel).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(done.cancelled && !done.timed_out);
    assert_eq!(done.exit_code, None);
    assert_no_sleep_left(&docker, &id).await;
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn long_output_keeps_its_head_and_tail() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-cap").await;
    let call = ExecCall {
        max_output_bytes: 1000,
        ..call("echo FIRST; seq 1 100000; echo LAST")
    };
    let done = docker
        .exec(&id, call, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(done.exit_code, Some(0));
    assert!(
        done.output.starts_with("FIRST\n1\n2\n"),
        "{}",
        &done.output[..50]
    );
    assert!(done.output.ends_with("99999\n100000\nLAST\n"));
    assert!(
        done.output.contains("bytes of output cut"),
        "{}",
        done.output
    );
    assert!(done.output.len() < 1200, "{}", done.output.len());
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn nothing_a_call_starts_outlives_it() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-leftovers").await;
    for command in [
        "setsid sleep 1000 &",
        // What `nohup sleep 1000 &` does (Debian's busybox has no nohup applet): ignore SIGHUP.
        "(trap '' HUP; exec sleep 1000) > /dev/null 2>&1 &",
        "(sleep 1000 &) ; echo double-forked",
        "setsid sh -c 'sleep 1000 & sleep 1001' > /dev/null 2>&1 < /dev/null &",
    ] {
        let started = Instant::now();
        let done = run(&docker, &id, command).await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{command:?} held the call for {:?}",
            started.elapsed()
        );
        assert_eq!(done.exit_code, Some(0), "{command:?}: {}", done.output);
        assert!(done.stopped_leftovers, "{command:?} left nothing to kill?");
        assert_no_sleep_left(&docker, &id).await;
    }
    let done = run(&docker, &id, "echo still working").await;
    assert_eq!(done.output, "still working\n");
    assert!(!done.stopped_leftovers);
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn a_call_dropped_half_way_is_cleaned_up_all_the_same() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-dropped").await;
    let call = call("setsid sleep 1000 & sleep 1001");
    let dropped = tokio::time::timeout(
        Duration::from_millis(500),
        docker.exec(&id, call, &CancellationToken::new()),
    )
    .await;
    assert!(dropped.is_err(), "the call was still running when dropped");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_no_sleep_left(&docker, &id).await;
    docker.remove(&id).await.unwrap();
}

/// No `sleep 100x` runs in the container (the keeper's own long sleep does not count).
async fn assert_no_sleep_left(docker: &Docker, id: &str) {
    let ps = run(docker, id, "ps -o pid,args").await;
    let left: Vec<_> = ps
        .output
        .lines()
        .filter(|line| line.contains("sleep 10"))
        .collect();
    assert!(left.is_empty(), "still running: {left:?}\n{}", ps.output);
}

/// The cost of one call of `true`: `cargo test -p hermes-docker --test exec -- --ignored
/// --nocapture exec_cost`.
#[tokio::test]
#[ignore = "a measurement, not a check"]
async fn exec_cost_of_true() {
    let (_daemon, docker) = docker_or_skip!();
    let (id, _session) = container(&docker, "exec-cost").await;
    for _ in 0..5 {
        run(&docker, &id, "true").await;
    }
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        let done = run(&docker, &id, "true").await;
        times.push(started.elapsed());
        assert_eq!(done.exit_code, Some(0));
    }
    times.sort();
    println!(
        "exec of `true`: median {:.1} ms (min {:.1}, max {:.1}) over 30 runs",
        times[15].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[29].as_secs_f64() * 1e3
    );
    docker.remove(&id).await.unwrap();
}
