//! `hermes import hermes-agent`, end to end: the real hermes-agent 0.19.0 (PyPI, installed by
//! `.ci/hermes-agent`) writes a user's home with its own code — settings, a skill, memory and a
//! Telegram conversation in its state.db (`tests/fixtures/hermes_agent/make_home.py`) — and after
//! the import that user finds all of it in hermes: the skill in the index sent to the model, the
//! memory in the system prompt, and the old conversation through `session_search`.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;
use support::WAIT;
use support::daemon::{ALICE, World};
use support::llm::Reply;

/// The venv's Python, with hermes-agent 0.19.0.
fn python() -> PathBuf {
    let venv =
        std::env::var("HERMES_AGENT_VENV").unwrap_or_else(|_| "/opt/hermes-agent-venv".into());
    let py = Path::new(&venv).join("bin/python");
    assert!(
        py.is_file(),
        "hermes-agent 0.19.0 is missing: run .ci/hermes-agent (it installs {}; or set \
         HERMES_AGENT_VENV to a venv with `pip install hermes-agent==0.19.0`)",
        py.display()
    );
    py
}

/// A hermes-agent home written by hermes-agent itself.
fn hermes_agent_home(dir: &Path) {
    let script = format!(
        "{}/tests/fixtures/hermes_agent/make_home.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = std::process::Command::new(python())
        .arg(script)
        .arg(dir)
        // hermes-agent must not find a home of its own or reach anything.
        .env("HOME", dir)
        .env_remove("HERMES_HOME")
        .output()
        .expect("run make_home.py");
    assert!(
        out.status.success(),
        "make_home.py failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hermes_agent_users_skill_memory_and_old_conversation_are_found_after_the_import() {
    let mut w = World::new("").await;
    let agent = tempfile::tempdir().unwrap();
    let agent_home = agent.path().join("hermes-agent-home");
    hermes_agent_home(&agent_home);
    let dir = agent_home.to_str().unwrap();

    // A dry run says what would come over and writes nothing.
    let (status, out, err) =
        tokio::task::block_in_place(|| w.run(&["import", "hermes-agent", dir, "--dry-run"]));
    assert!(status.success(), "{out}\n{err}");
    assert!(out.contains("hive-inspection: to copy"), "{out}");
    assert!(
        out.contains("1 conversation(s) to import (4 messages)"),
        "{out}"
    );
    assert!(out.contains("TELEGRAM_BOT_TOKEN: to add"), "{out}");
    assert!(
        !out.contains("FROM-hermes-agent"),
        "secrets are never printed: {out}"
    );
    assert_eq!(names_in(w.home.path()), ["config.toml"], "nothing written");
    assert_eq!(
        std::fs::read_to_string(w.home.path().join("config.toml")).unwrap(),
        ""
    );

    let (status, out, err) =
        tokio::task::block_in_place(|| w.run(&["import", "hermes-agent", dir]));
    assert!(status.success(), "{out}\n{err}");
    assert!(
        out.contains("1 conversation(s) imported (4 messages)"),
        "{out}"
    );
    assert!(
        out.contains("telegram:111: added 1 of 1 MEMORY.md, 1 of 1 USER.md"),
        "{out}"
    );
    let env_file = w.home.path().join("hermes.env");
    let env = std::fs::read_to_string(&env_file).unwrap();
    assert!(
        env.contains("TELEGRAM_BOT_TOKEN=999999:FROM-hermes-agent\n"),
        "{env}"
    );
    assert!(
        env.contains("OPENAI_API_KEY=sk-from-hermes-agent\n"),
        "{env}"
    );
    let mode = std::fs::metadata(&env_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "hermes.env is private");
    let config = std::fs::read_to_string(w.home.path().join("config.toml")).unwrap();
    assert!(
        config.contains("[telegram]\nallowed_users = [\"111\"]"),
        "{config}"
    );
    assert!(config.contains("model = \"llama-3.3-70b\""), "{config}");

    // Again: nothing is imported twice.
    let (status, out, err) =
        tokio::task::block_in_place(|| w.run(&["import", "hermes-agent", dir]));
    assert!(status.success(), "{out}\n{err}");
    assert!(
        out.contains("0 conversation(s) imported (0 messages)"),
        "{out}"
    );
    assert!(out.contains("1 imported before"), "{out}");
    assert!(out.contains("hive-inspection: already here"), "{out}");
    let (_, sessions, _) = tokio::task::block_in_place(|| w.run(&["sessions", "list"]));
    assert_eq!(sessions.matches("telegram:111").count(), 1, "{sessions}");

    let (status, skills, err) = tokio::task::block_in_place(|| w.run(&["skills", "list"]));
    assert!(status.success(), "{err}");
    assert!(skills.contains("hive-inspection"), "{skills}");

    // Alice (Telegram user 111, as in hermes-agent) asks; the model searches her history.
    w.llm.push(Reply::tool_call(
        "session_search",
        json!({"query": "beehive gate code"}),
    ));
    w.llm.push(Reply::text("It was Lavender-42."));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "what was my beehive gate code again?");
    w.tg.wait_sent(1, WAIT).await;
    let requests = w.llm.requests();
    let system = requests[0].system_text().unwrap();
    assert!(
        system.contains("- hive-inspection: Walk through a beehive inspection checklist"),
        "the imported skill is in the index: {system}"
    );
    assert!(
        system.contains("marmoset-7"),
        "MEMORY.md reached the prompt: {system}"
    );
    assert!(
        system.contains("Alice keeps bees and prefers answers in metric units"),
        "USER.md reached the prompt: {system}"
    );
    let results = requests.last().unwrap().tool_result_texts();
    assert!(
        results[0].contains("My beehive gate code is Lavender-42"),
        "session_search found the old conversation: {}",
        results[0]
    );
    assert!(
        results[0].contains("2024-03-01"),
        "with its original date: {}",
        results[0]
    );
}
