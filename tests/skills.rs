//! Skills through the real binary: the index in the system prompt (stable within a session,
//! updated in the next), explicit skills from the chat, and a silent background review that
//! saves a skill after a long task.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::daemon::{ALICE, World};
use support::llm::{Reply, reviewing};
use support::{WAIT, wait_for};

const NEW_SKILL: &str = "---\nname: tokyo-time\ndescription: Find the current time in Tokyo and say whether it is a good time to call.\n---\n\n1. Call current_time with timezone Asia/Tokyo.\n2. Between 09:00 and 21:00 it is fine to call.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skills_index_is_stable_within_a_session_and_updated_in_the_next() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "hi");
    w.tg.wait_sent(1, WAIT).await;
    let first = w.llm.requests()[0].system_text().unwrap();
    assert!(
        first.contains("## Skills") && first.contains("- hermes-operations:"),
        "{first}"
    );
    assert!(
        first.contains("save the approach as a skill"),
        "the guidance is there"
    );

    let dir = w.home.path().join("skills/tokyo-time");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), NEW_SKILL).unwrap();
    w.tg.private_text(ALICE, "Alice", "again");
    w.tg.wait_sent(2, WAIT).await;
    assert_eq!(
        w.llm.requests()[1].system_text().unwrap(),
        first,
        "byte-identical within the session"
    );

    w.tg.private_text(ALICE, "Alice", "/new");
    w.tg.private_text(ALICE, "Alice", "fresh");
    w.tg.wait_sent(4, WAIT).await;
    let next = w.llm.requests().pop().unwrap().system_text().unwrap();
    assert!(
        next.contains("- tokyo-time: Find the current time in Tokyo"),
        "{next}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_skill_goes_into_the_user_message_not_the_system_prompt() {
    let mut w = World::new("").await;
    w.llm.set_default(|_| Reply::text("ok"));
    let _daemon = w.start().await;
    w.tg.private_text(
        ALICE,
        "Alice",
        "/hermes-operations how do I check my config?",
    );
    w.tg.wait_sent(1, WAIT).await;
    let req = w.llm.requests().pop().unwrap();
    let user = req.last_user_text().unwrap();
    assert!(
        user.starts_with("[Explicit skill: the user chose the skill \"hermes-operations\""),
        "{user}"
    );
    assert!(user.contains("<skill name=\"hermes-operations\">"));
    assert!(user.ends_with("how do I check my config?"), "{user}");
    let system = req.system_text().unwrap();
    assert!(
        !system.contains("<skill name="),
        "the body is not in the system prompt"
    );

    w.tg.private_text(ALICE, "Alice", "/skills");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[1].visible_text.contains("/hermes-operations"),
        "{}",
        sent[1].visible_text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_task_is_followed_by_a_silent_review_that_saves_a_skill() {
    // Skills are shared, so only an operator's work becomes one: Alice runs this bot.
    let mut w =
        World::new("[memory]\nreview_interval = 0\n[access]\noperators = [\"telegram:111\"]\n")
            .await;
    for _ in 0..12 {
        w.llm.push(Reply::tool_call(
            "current_time",
            json!({"timezone": "Asia/Tokyo"}),
        ));
    }
    w.llm
        .push(Reply::text("It is 22:00 in Tokyo: too late to call."));
    w.llm.set_default(|req| {
        if !reviewing(req) {
            return Reply::text("ok");
        }
        match req.tool_results().len() {
            0 => Reply::tool_call("skills_list", json!({})),
            1 => Reply::tool_call(
                "skill_manage",
                json!({"action": "create", "name": "tokyo-time", "content": NEW_SKILL}),
            ),
            _ => Reply::text("Saved the tokyo-time skill."),
        }
    });
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "can I call my colleague in Tokyo now?");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(
        sent[0].visible_text,
        "It is 22:00 in Tokyo: too late to call."
    );

    let file = w.home.path().join("skills/tokyo-time/SKILL.md");
    let saved = || file.exists().then_some(());
    wait_for(WAIT, "the review to save the skill", saved, String::new).await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), NEW_SKILL);
    let (status, stdout, _) = w.run(&["skills", "validate"]);
    assert!(status.success(), "{stdout}");
    let reqs = w.llm.requests();
    let review = reqs.iter().position(reviewing).unwrap();
    assert_eq!(review, 13, "the review came after the 13 calls of the turn");
    assert!(
        !reqs[review].tool_names().contains(&"terminal".to_owned()),
        "the reviewer has only skill tools"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(w.tg.sent().len(), 1, "the user saw nothing of the review");

    w.tg.private_text(ALICE, "Alice", "/new");
    w.tg.private_text(ALICE, "Alice", "and now?");
    w.tg.wait_sent(3, WAIT).await;
    let prompt = w.llm.requests().pop().unwrap().system_text().unwrap();
    assert!(
        prompt.contains("- tokyo-time:"),
        "the next session lists the new skill"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skills_review_with_nothing_to_save_writes_nothing() {
    let mut w = World::new(
        "[memory]\nreview_interval = 0\n[skills]\nreview_interval = 2\n[access]\noperators = [\"telegram:111\"]\n",
    )
    .await;
    w.llm.push(Reply::tool_call("current_time", json!({})));
    w.llm.push(Reply::tool_call("current_time", json!({})));
    w.llm.push(Reply::text("done"));
    w.llm.set_default(|req| {
        if reviewing(req) {
            Reply::text("Nothing to save.")
        } else {
            Reply::text("ok")
        }
    });
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "time twice");
    w.tg.wait_sent(1, WAIT).await;
    w.llm.wait_request("a review", WAIT, reviewing).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !w.home.path().join("skills").exists()
            || std::fs::read_dir(w.home.path().join("skills"))
                .unwrap()
                .next()
                .is_none()
    );
}
