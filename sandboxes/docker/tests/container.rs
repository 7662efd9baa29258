//! `ensure`, `list`, `remove` and `reap` against a real dockerd: the container's settings as
//! dockerd reports them, idempotence, races, restarts, and instances kept apart.

mod support;

use std::os::unix::fs::MetadataExt;

use bollard::models::ContainerStateStatusEnum;
use hermes_docker::{Docker, DockerError};
use support::Session;

#[tokio::test]
async fn ensure_creates_a_container_with_every_sandbox_setting() {
    let (daemon, docker) = docker_or_skip!();
    let session = Session::new("settings", "telegram:42");
    let id = docker.ensure(&session.spec).await.expect("ensure");

    let found = daemon
        .api()
        .await
        .inspect_container(&id, None)
        .await
        .unwrap();
    let host = found.host_config.expect("host config");
    assert_eq!(host.network_mode.as_deref(), Some("none"));
    assert_eq!(host.readonly_rootfs, Some(true));
    let tmpfs = host.tmpfs.expect("tmpfs");
    let tmp = tmpfs.get("/tmp").expect("a tmpfs at /tmp");
    assert!(tmp.contains("size=128m"), "/tmp options: {tmp}");
    assert_eq!(host.cap_drop, Some(vec!["ALL".to_owned()]));
    assert_eq!(
        host.security_opt,
        Some(vec!["no-new-privileges".to_owned()])
    );
    assert_eq!(host.pids_limit, Some(64));
    assert_eq!(host.memory, Some(256 * 1024 * 1024));
    assert_eq!(host.memory_swap, Some(256 * 1024 * 1024));
    assert_eq!(host.nano_cpus, Some(1_000_000_000));
    assert_ne!(host.privileged, Some(true));

    let mounts = found.mounts.expect("mounts");
    let workspace = mounts
        .iter()
        .find(|m| m.destination.as_deref() == Some("/workspace"))
        .expect("the workspace is mounted");
    assert_eq!(
        workspace.typ.as_ref().map(|t| t.to_string()).as_deref(),
        Some("bind")
    );
    assert_eq!(
        workspace.source.as_deref(),
        Some(session.workspace.path().to_str().unwrap())
    );
    assert_eq!(workspace.rw, Some(true));
    assert_eq!(
        mounts.len(),
        1,
        "only the workspace comes from the host: {mounts:?}"
    );

    let config = found.config.expect("config");
    let labels = config.labels.expect("labels");
    assert_eq!(
        labels.get("hermes.instance").map(String::as_str),
        Some("settings")
    );
    assert_eq!(
        labels.get("hermes.session").map(String::as_str),
        Some("telegram:42")
    );
    let meta = std::fs::metadata(session.workspace.path()).unwrap();
    assert_eq!(
        config.user.as_deref(),
        Some(format!("{}:{}", meta.uid(), meta.gid()).as_str()),
        "commands run as the workspace's owner"
    );
    assert_eq!(
        found.name.as_deref(),
        Some(&*format!("/{}", session.spec.name))
    );
    let state = found.state.expect("state");
    assert_eq!(state.status, Some(ContainerStateStatusEnum::RUNNING));
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn ensure_is_idempotent() {
    let (_daemon, docker) = docker_or_skip!();
    let session = Session::new("idempotent", "s");
    let first = docker.ensure(&session.spec).await.unwrap();
    let second = docker.ensure(&session.spec).await.unwrap();
    assert_eq!(first, second);
    assert_eq!(docker.list("idempotent").await.unwrap().len(), 1);
    docker.reap("idempotent").await.unwrap();
}

#[tokio::test]
async fn concurrent_ensure_calls_make_one_container() {
    let (daemon, docker) = docker_or_skip!();
    // Within one client (the lock) and across two clients, as two processes would be
    // (dockerd's name conflict).
    let other = Docker::connect(Some(&daemon.socket)).await.unwrap();
    let session = Session::new("race", "s");
    let (a, b, c) = tokio::join!(
        docker.ensure(&session.spec),
        docker.ensure(&session.spec),
        other.ensure(&session.spec)
    );
    let (a, b, c) = (a.unwrap(), b.unwrap(), c.unwrap());
    assert_eq!(a, b);
    assert_eq!(a, c);
    let listed = docker.list("race").await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    docker.reap("race").await.unwrap();
}

#[tokio::test]
async fn a_stopped_container_is_started_again() {
    let (daemon, docker) = docker_or_skip!();
    let session = Session::new("stopped", "s");
    let id = docker.ensure(&session.spec).await.unwrap();
    daemon.api().await.kill_container(&id, None).await.unwrap();
    let err = docker
        .exec(&id, support::call("true"), &Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, DockerError::NotRunning { .. }), "{err}");

    let again = docker.ensure(&session.spec).await.unwrap();
    assert_eq!(again, id, "the stopped container is started, not replaced");
    assert_eq!(support::run(&docker, &id, "echo up").await.output, "up\n");
    docker.remove(&id).await.unwrap();
}

#[tokio::test]
async fn changed_settings_replace_the_container() {
    let (_daemon, docker) = docker_or_skip!();
    let mut session = Session::new("changed", "s");
    let old = docker.ensure(&session.spec).await.unwrap();
    session.spec.memory_mb = 128;
    let new = docker.ensure(&session.spec).await.unwrap();
    assert_ne!(old, new);
    let listed = docker.list("changed").await.unwrap();
    assert_eq!(listed.len(), 1, "the old container is gone: {listed:?}");
    docker.remove(&new).await.unwrap();
}

#[tokio::test]
async fn a_missing_image_is_named_and_never_pulled() {
    let (_daemon, docker) = docker_or_skip!();
    let mut session = Session::new("noimage", "s");
    session.spec.image = "hermes-not-here:1".to_owned();
    assert!(!docker.has_image("hermes-not-here:1").await.unwrap());
    assert!(docker.has_image(support::IMAGE).await.unwrap());
    let err = docker.ensure(&session.spec).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, DockerError::MissingImage { .. }), "{message}");
    assert!(message.contains("hermes-not-here:1"), "{message}");
    assert!(message.contains("docker pull"), "{message}");
    assert!(docker.list("noimage").await.unwrap().is_empty());
}

#[tokio::test]
async fn an_unreachable_socket_is_reported_in_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("docker.sock");
    let err = Docker::connect(Some(&socket))
        .await
        .err()
        .expect("no daemon there");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "dockerd is not reachable at {}: ",
            socket.display()
        )),
        "{message}"
    );
}

#[tokio::test]
async fn list_remove_and_reap_touch_only_their_instance() {
    let (_daemon, docker) = docker_or_skip!();
    let mine = [Session::new("reap-a", "one"), Session::new("reap-a", "two")];
    let theirs = Session::new("reap-b", "one");
    for session in mine.iter().chain([&theirs]) {
        docker.ensure(&session.spec).await.unwrap();
    }
    let mut listed = docker.list("reap-a").await.unwrap();
    listed.sort_by(|a, b| a.session.cmp(&b.session));
    let sessions: Vec<_> = listed.iter().map(|c| c.session.as_str()).collect();
    assert_eq!(sessions, ["one", "two"]);
    assert_eq!(listed[0].name, mine[0].spec.name);
    assert!(listed.iter().all(|c| c.state == "running"), "{listed:?}");

    docker.remove(&listed[0].name).await.unwrap();
    docker
        .remove(&listed[0].name)
        .await
        .expect("removing twice is fine");
    assert_eq!(docker.list("reap-a").await.unwrap().len(), 1);

    assert_eq!(docker.reap("reap-a").await.unwrap(), 1);
    assert!(docker.list("reap-a").await.unwrap().is_empty());
    let survivors = docker.list("reap-b").await.unwrap();
    assert_eq!(
        survivors.len(),
        1,
        "another instance's container is untouched"
    );
    assert_eq!(survivors[0].state, "running");
    assert_eq!(docker.reap("reap-b").await.unwrap(), 1);
}
