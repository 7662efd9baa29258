//! Agent profiles through the real binary: two profiles routed to two platforms reach the model
//! with their own model name, system prompt and tools; `/profile` shows and switches a chat's
//! profile (a new conversation); a profile's level and skills apply.

use crate::support;

use support::WAIT;
use support::daemon::{ALICE, TOKEN};
use support::slack::{Mode, SlackWorld};

const CONFIG: &str = r#"
[profiles.analyst]
description = "markets and numbers"
model = "analyst-model"
system_prompt = "You are the ANALYST profile."
toolsets = ["core", "web"]

[profiles.coder]
model = "coder-model"
system_prompt_file = "coder.md"
toolsets = ["core", "files"]

[agent.profile_routes]
telegram = "analyst"
slack = "coder"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_platforms_reach_the_model_with_their_profiles_and_profile_switches_a_chat() {
    let mut sw = SlackWorld::new(CONFIG, Mode::Socket).await;
    std::fs::write(
        sw.w.home.path().join("coder.md"),
        "You are the CODER profile.\n",
    )
    .unwrap();
    sw.w.set_env("TELEGRAM_BOT_TOKEN", TOKEN);
    let _daemon = sw.start().await;

    sw.w.tg.private_text(ALICE, "Alice", "how are markets?");
    sw.w.tg.wait_sent(1, WAIT).await;
    sw.slack.dm(support::slack::ALICE, "fix my code");
    sw.slack.wait_posted(1, WAIT).await;
    let reqs = sw.w.llm.wait_requests(2, WAIT).await;
    let tg = reqs
        .iter()
        .find(|r| r.last_user_text().unwrap().contains("markets"))
        .unwrap();
    let slack = reqs
        .iter()
        .find(|r| r.last_user_text().unwrap().contains("fix my code"))
        .unwrap();
    assert_eq!(tg.model(), Some("analyst-model"));
    assert!(
        tg.system_text()
            .unwrap()
            .contains("You are the ANALYST profile.")
    );
    assert!(tg.tool_names().contains(&"web_fetch".to_owned()));
    assert!(
        !tg.tool_names().contains(&"write_file".to_owned()),
        "{:?}",
        tg.tool_names()
    );
    assert_eq!(slack.model(), Some("coder-model"));
    assert!(
        slack
            .system_text()
            .unwrap()
            .contains("You are the CODER profile.")
    );
    assert!(!slack.system_text().unwrap().contains("ANALYST"));
    assert!(slack.tool_names().contains(&"write_file".to_owned()));
    assert!(!slack.tool_names().contains(&"web_fetch".to_owned()));

    // The turns are recorded with the model that answered them (usage and cost per model).
    let db = rusqlite::Connection::open(sw.w.home.path().join("hermes.db")).unwrap();
    let mut models: Vec<String> = db
        .prepare("SELECT model FROM turns")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    models.sort();
    assert_eq!(models, ["analyst-model", "coder-model"]);

    // `/profile` lists them; `/profile coder` switches Alice's Telegram chat.
    sw.w.tg.private_text(ALICE, "Alice", "/profile");
    let sent = sw.w.tg.wait_sent(2, WAIT).await;
    let shown = &sent[1].visible_text;
    assert!(shown.contains("Profile: analyst."), "{shown}");
    assert!(
        shown.contains("analyst (analyst-model) — markets and numbers"),
        "{shown}"
    );
    assert!(shown.contains("coder (coder-model)"), "{shown}");
    sw.w.tg.private_text(ALICE, "Alice", "/profile coder");
    let sent = sw.w.tg.wait_sent(3, WAIT).await;
    assert!(
        sent[2].visible_text.contains("Profile: coder."),
        "{}",
        sent[2].visible_text
    );
    sw.w.tg.private_text(ALICE, "Alice", "now code");
    sw.w.tg.wait_sent(4, WAIT).await;
    let reqs = sw.w.llm.requests();
    let after = reqs.last().unwrap();
    assert_eq!(after.model(), Some("coder-model"));
    assert!(after.system_text().unwrap().contains("CODER"));
    // A new conversation: the analyst turn is not in its history.
    assert!(
        !after
            .messages()
            .iter()
            .any(|m| m.to_string().contains("how are markets"))
    );
    assert_eq!(reqs.len(), 3, "the commands cost no model call");

    // Unknown names are refused with the list; `default` goes back to the route.
    sw.w.tg.private_text(ALICE, "Alice", "/profile nope");
    let sent = sw.w.tg.wait_sent(5, WAIT).await;
    assert!(
        sent[4]
            .visible_text
            .starts_with("Unknown profile nope. Profile: coder."),
        "{}",
        sent[4].visible_text
    );
    sw.w.tg.private_text(ALICE, "Alice", "/profile default");
    let sent = sw.w.tg.wait_sent(6, WAIT).await;
    assert!(
        sent[5].visible_text.contains("Profile: analyst."),
        "{}",
        sent[5].visible_text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_naming_an_unknown_toolset_or_profile_is_a_config_error() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("config.toml");
    for (text, key) in [
        (
            "[profiles.x]\ntoolsets = [\"nope\"]\n",
            "profiles.x.toolsets",
        ),
        (
            "[agent]\ndefault_profile = \"ghost\"\n",
            "agent.default_profile",
        ),
        (
            "[profiles.x]\nsystem_prompt_file = \"missing.md\"\n",
            "profiles.x.system_prompt_file",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hermes"))
            .args(["config", "check", "--config"])
            .arg(&path)
            .env("HERMES_HOME", home.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(err.contains(key), "{key} not named in: {err}");
    }
}
