//! The terminal and the file tools over SSH, through the real binary against a real `sshd` on
//! 127.0.0.1 (its own host key and `authorized_keys`, SFTP served by sshd itself): commands run
//! in the person's directory on the remote side and leave nothing running there; the file tools
//! read and write the same remote files; an unknown or wrong host key is refused; killing the server
//! mid-session gives the model an error and the next call reconnects.
//!
//! Needs Debian's `openssh-server` (`.ci/test` installs it); without it these tests fail saying
//! so.

use crate::support;

use support::WAIT;
use support::daemon::{ALICE, World};
use support::llm::Reply;
use support::sandboxed::wait_gone;
use support::sshd::{RemoteRoot, Sshd, USER};

/// Alice is a person allowed to run commands; the remote workspaces are under `remote`.
fn config(sshd: &Sshd, known_hosts: &std::path::Path, remote: &std::path::Path) -> String {
    format!(
        "[policy]\nlevel = \"full-access\"\nmax_level = \"full-access\"\n\n\
         [tools.sandbox]\nbackend = \"ssh\"\n\n[tools.sandbox.ssh]\nhost = \"127.0.0.1\"\n\
         port = {}\nuser = \"{USER}\"\nidentity_file = \"{}\"\nknown_hosts = \"{}\"\nroot = \"{}\"\n\
         connect_timeout_secs = 5\nkeepalive_secs = 2\n",
        sshd.port,
        sshd.client_key().display(),
        known_hosts.display(),
        remote.display()
    )
}

/// A daemon using `sshd` with its right host key; the remote workspaces' root.
async fn world(sshd: &Sshd) -> (World, RemoteRoot) {
    let known = sshd.dir.path().join("known_hosts");
    std::fs::write(&known, sshd.known_hosts_line()).unwrap();
    let remote = RemoteRoot::new();
    (World::new(&config(sshd, &known, &remote.0)).await, remote)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_in_the_persons_remote_directory_and_leave_nothing_behind() {
    let sshd = Sshd::start();
    let (mut w, remote) = world(&sshd).await;
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({
            "command": "pwd; echo hello > note.txt; echo \"secret=${TELEGRAM_BOT_TOKEN:-none}\"; \
                        setsid sleep 4343.5 & echo started; sleep 1; echo awake"
        }),
    ));
    // The file tools work on the same remote files: what write_file wrote, the terminal reads
    // there, and what the terminal wrote, read_file and search_files find.
    w.llm.push(Reply::tool_call(
        "write_file",
        serde_json::json!({"path": "sub/x.txt", "content": "written by write_file\n"}),
    ));
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({"command": "cat sub/x.txt; stat -c 'owner=%U' sub/x.txt"}),
    ));
    w.llm.push(Reply::tool_call(
        "read_file",
        serde_json::json!({"path": "note.txt"}),
    ));
    w.llm.push(Reply::tool_call(
        "search_files",
        serde_json::json!({"pattern": "write_file"}),
    ));
    w.llm.push(Reply::tool_call(
        "read_file",
        serde_json::json!({"path": "../../../../etc/hostname"}),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "run it remotely");
    let seen = w.llm.tool_output_seen_by(2, WAIT).await;
    let dir = remote.0.join("telegram").join(ALICE.to_string());
    assert!(seen.contains(dir.to_str().unwrap()), "{seen}");
    assert!(
        seen.contains("secret=none") && seen.contains("started") && seen.contains("awake"),
        "{seen}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("note.txt")).unwrap(),
        "hello\n"
    );
    wait_gone("4343.5", "the remote setsid child").await;
    let written = w.llm.tool_output_seen_by(3, WAIT).await;
    assert!(written.contains("created `sub/x.txt`"), "{written}");
    let cat = w.llm.tool_output_seen_by(4, WAIT).await;
    assert!(
        cat.contains("written by write_file") && cat.contains(&format!("owner={USER}")),
        "the terminal reads the file on the remote side: {cat}"
    );
    let read = w.llm.tool_output_seen_by(5, WAIT).await;
    assert!(read.contains("hello"), "{read}");
    let found = w.llm.tool_output_seen_by(6, WAIT).await;
    assert!(
        found.contains("sub/x.txt:1: written by write_file"),
        "{found}"
    );
    let escape = w.llm.tool_output_seen_by(7, WAIT).await;
    assert!(escape.contains("outside the workspace"), "{escape}");
    assert!(
        !w.home
            .path()
            .join("workspace/telegram")
            .join(ALICE.to_string())
            .join("sub")
            .exists(),
        "nothing was written on this side"
    );
    let (_, out, err) = w.run(&["doctor"]);
    assert!(
        format!("{out}{err}").contains(&format!("terminal sandbox: ssh to {USER}@127.0.0.1")),
        "{out}{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_or_wrong_host_key_is_refused() {
    let sshd = Sshd::start();
    let other = Sshd::start();
    let known = sshd.dir.path().join("known_hosts");
    // The other server's key under this server's name: a changed key.
    let wrong = other
        .known_hosts_line()
        .replace(&other.port.to_string(), &sshd.port.to_string());
    std::fs::write(&known, wrong).unwrap();
    let remote = sshd.dir.path().join("remote");
    let mut w = World::new(&config(&sshd, &known, &remote)).await;
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({"command": "echo ran > ran.txt"}),
    ));
    w.llm.push(Reply::text("refused"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "try");
    let seen = w.llm.tool_output_seen_by(2, WAIT).await;
    assert!(
        seen.contains("cannot connect") && seen.contains("Host key verification failed"),
        "{seen}"
    );
    assert!(!remote.join("telegram").exists(), "nothing ran: {seen}");
    // A host missing from known_hosts is refused too (no trust on first use by default).
    std::fs::write(&known, "").unwrap();
    w.tg.wait_sent(1, WAIT).await;
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({"command": "echo ran > ran.txt"}),
    ));
    w.tg.private_text(ALICE, "Alice", "again");
    let seen = w.llm.tool_output_seen_by(4, WAIT).await;
    assert!(
        seen.matches("Host key verification failed").count() >= 2,
        "{seen}"
    );
    assert!(!remote.join("telegram").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_sshd_mid_session_is_an_error_and_the_next_call_reconnects() {
    let mut sshd = Sshd::start();
    let (mut w, _remote) = world(&sshd).await;
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({"command": "echo first"}),
    ));
    // The file tools' SFTP session is open too when the server goes.
    w.llm.push(Reply::tool_call(
        "write_file",
        serde_json::json!({"path": "kept.txt", "content": "kept\n"}),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "go");
    let seen = w.llm.tool_output_seen_by(3, WAIT).await;
    assert!(
        seen.contains("first") && seen.contains("created `kept.txt`"),
        "{seen}"
    );
    w.tg.wait_sent(1, WAIT).await;
    // The server goes away under the open master connection.
    sshd.kill();
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({"command": "echo second"}),
    ));
    w.tg.private_text(ALICE, "Alice", "again");
    let seen = w.llm.tool_output_seen_by(5, WAIT).await;
    assert!(
        seen.contains("over SSH") || seen.contains("SSH connection"),
        "the model is told the connection failed: {seen}"
    );
    assert!(!seen.contains("second"), "{seen}");
    w.tg.wait_sent(2, WAIT).await;
    sshd.restart();
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({"command": "echo back again"}),
    ));
    w.llm.push(Reply::tool_call(
        "read_file",
        serde_json::json!({"path": "kept.txt"}),
    ));
    w.tg.private_text(ALICE, "Alice", "once more");
    let seen = w.llm.tool_output_seen_by(8, WAIT).await;
    assert!(seen.contains("back again"), "{seen}");
    assert!(seen.contains("1| kept"), "the file tools reconnect: {seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --run-ignored only --no-capture"]
async fn call_cost_over_ssh() {
    let sshd = Sshd::start();
    let known = sshd.dir.path().join("known_hosts");
    std::fs::write(&known, sshd.known_hosts_line()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut settings = hermes::tools::terminal::TerminalSettings::new(dir.path());
    settings.hermes_home = Some(dir.path().join("home"));
    settings.sandbox.backend = hermes::config::SandboxBackend::Ssh;
    let ssh = &mut settings.sandbox.ssh;
    ssh.host = "127.0.0.1".into();
    ssh.port = sshd.port;
    ssh.user = USER.into();
    ssh.identity_file = Some(sshd.client_key());
    ssh.known_hosts = Some(known);
    let remote = RemoteRoot::new();
    ssh.root = remote.0.display().to_string();
    let (median, min) = support::cost::call_cost(settings, 30).await;
    println!("terminal `true` via ssh: median {median:?}, min {min:?} (30 calls)");
}
