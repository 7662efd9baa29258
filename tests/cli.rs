//! The command line as a user meets it: configuration errors, a missing provider, `chat` and
//! `doctor`.

use crate::support;

use support::daemon::World;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_check_on_a_broken_file_names_the_key_and_fails() {
    let w = World::new("[gateway]\nbusy_mode = \"sometimes\"\n").await;
    let (status, _, stderr) = w.run(&["config", "check"]);
    assert!(!status.success());
    assert!(
        stderr.contains("config.toml, line 2, key `gateway.busy_mode`"),
        "{stderr}"
    );
    assert!(stderr.contains("interrupt"), "the fix is named: {stderr}");

    let (status, _, stderr) = w.run(&["config", "check", "--config", "/nonexistent/hermes.toml"]);
    assert!(!status.success());
    assert!(
        stderr.contains("/nonexistent/hermes.toml") && stderr.contains("cannot read"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_check_summarises_without_secrets() {
    let w = World::new("[agent]\nmax_iterations = 12\n").await;
    let (status, stdout, stderr) = w.run(&["config", "check"]);
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("Configuration OK"), "{stdout}");
    assert!(stdout.contains("12 steps"), "{stdout}");
    assert!(
        !stdout.contains(support::daemon::TOKEN) && !stdout.contains("sk-test-key"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_without_a_provider_says_how_to_set_one() {
    let mut w = World::new("").await;
    w.set_env("OPENAI_API_KEY", "");
    w.set_env("OPENAI_BASE_URL", "");
    let (status, _, stderr) = w.run(&["gateway"]);
    assert!(!status.success());
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one clear line: {stderr}");
    assert!(lines[0].contains("OPENAI_API_KEY"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_talks_to_the_agent_in_the_terminal() {
    let w = World::new("").await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hermes"))
        .arg("chat")
        .env_clear()
        .env("HERMES_HOME", w.home.path())
        .env("OPENAI_BASE_URL", w.llm.base_url())
        .env("USER", "tester")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"hello from the terminal\n/exit\n")
        .unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("session cli:tester"), "{stdout}");
    assert!(stdout.contains("echo: hello from the terminal"), "{stdout}");
    let req = w.llm.requests().pop().unwrap();
    assert!(req.system_text().unwrap().contains("terminal"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_provider_and_token() {
    let w = World::new("").await;
    let (status, stdout, stderr) = w.run(&["doctor"]);
    assert!(status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("✓ model provider"), "{stdout}");
    assert!(stdout.contains("✓ telegram: @hermes_test_bot"), "{stdout}");

    let mut bad = World::new("").await;
    bad.set_env("TELEGRAM_BOT_TOKEN", "999:wrong");
    let (status, stdout, _) = bad.run(&["doctor"]);
    assert!(!status.success());
    assert!(stdout.contains("✗ telegram"), "{stdout}");
    assert!(!stdout.contains("999:wrong"), "token leaked: {stdout}");
}
