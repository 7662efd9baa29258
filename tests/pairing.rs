//! DM pairing through the real binary: a stranger gets a one-time code and no model call, a
//! wrong code is refused, the operator's `hermes pairing approve` lets them in (across a
//! restart), `revoke` shuts them out again; strangers in groups and with pairing off get
//! nothing.

use crate::support;

use serde_json::json;
use support::WAIT;
use support::daemon::World;

const STRANGER: i64 = 555_000_111;

fn cli(w: &World, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_hermes"))
        .args(args)
        .env("HERMES_HOME", w.home.path())
        .output()
        .unwrap()
}

fn code_in(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            w.len() == 8
                && w.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        .unwrap_or_else(|| panic!("no code in {text}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_is_paired_by_the_operator_and_can_be_revoked() {
    let mut w = World::new("[access]\npairing = true\n").await;
    let mut daemon = w.start().await;
    w.tg.private_text(STRANGER, "Sam", "hello?");
    let sent = w.tg.wait_sent(1, WAIT).await;
    let offer = &sent[0].visible_text;
    assert!(offer.contains("pairing code"), "{offer}");
    let code = code_in(offer);
    assert!(
        offer.contains(&format!("hermes pairing approve telegram {code}")),
        "{offer}"
    );
    // Asking again at once gives no second code, and nothing reaches the model.
    w.tg.private_text(STRANGER, "Sam", "hello??");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(w.tg.sent().len(), 1);
    assert!(w.llm.requests().is_empty(), "a stranger cost a model call");

    let list = cli(&w, &["pairing", "list"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains(&format!("telegram:{STRANGER}  Sam")),
        "{listed}"
    );
    assert!(!listed.contains(&code), "codes are stored hashed: {listed}");
    let wrong = cli(&w, &["pairing", "approve", "telegram", "ZZZZ2222"]);
    assert!(!wrong.status.success());
    let ok = cli(
        &w,
        &["pairing", "approve", "telegram", &code.to_lowercase()],
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    w.tg.private_text(STRANGER, "Sam", "am I in?");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent[1].visible_text, "echo: am I in?");
    // The approval is stored: it survives a restart.
    assert!(daemon.terminate(WAIT).success());
    let _daemon = w.start().await;
    w.tg.private_text(STRANGER, "Sam", "still there?");
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert_eq!(sent[2].visible_text, "echo: still there?");
    assert_eq!(w.llm.requests().len(), 2);

    let revoked = cli(
        &w,
        &["pairing", "revoke", "telegram", &STRANGER.to_string()],
    );
    assert!(revoked.status.success());
    w.tg.private_text(STRANGER, "Sam", "and now?");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        w.llm.requests().len(),
        2,
        "a revoked person is not answered by the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_in_groups_or_with_pairing_off_get_nothing() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    w.tg.private_text(STRANGER, "Sam", "hello?");
    w.tg.push_update(json!({"message": {
        "message_id": 9, "date": 1_700_000_000,
        "chat": {"id": -10042, "type": "group", "title": "G"},
        "from": {"id": STRANGER + 1, "is_bot": false, "first_name": "Gus"},
        "text": "@test_bot hi"
    }}));
    // A known user's message after them is answered: the strangers were handled (ignored).
    w.tg.private_text(support::daemon::ALICE, "Alice", "ping");
    let sent = w.tg.wait_sent(1, WAIT).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(w.tg.sent().len(), 1, "{sent:?}");
    assert_eq!(sent[0].visible_text, "echo: ping");
}
