//! A provider that is rate limited or down, through the real binary: retries honour
//! Retry-After, a dead provider falls over to the fallback, and the user sees one short notice
//! and then the answer — never silence, never a stack trace.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::WAIT;
use support::daemon::{ALICE, World};
use support::llm::{FakeLlm, Reply};
use support::telegram::visible;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_waited_out_with_one_notice() {
    let mut w = World::new("").await;
    w.llm.push(Reply::rate_limited(1));
    w.llm.push(Reply::rate_limited(1));
    w.llm.push(Reply::text("finally"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "hello?");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[0]
            .visible_text
            .starts_with("⏳ The model provider is slow"),
        "{}",
        sent[0].visible_text
    );
    assert_eq!(sent[1].visible_text, "finally");
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 3);
    for pair in reqs.windows(2) {
        let waited = pair[1].at.duration_since(pair[0].at);
        assert!(
            waited >= Duration::from_secs(1),
            "retried after {waited:?}, before Retry-After"
        );
    }
    // Only one notice, then the answer.
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert_eq!(visible(&sent)[2], "echo: sentinel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_provider_falls_over_to_the_fallback() {
    let backup = FakeLlm::start().await;
    backup.set_default(|_| Reply::text("from the backup"));
    let config = format!(
        "[llm]\nmax_retries = 1\n[[llm.fallback]]\nprovider = \"openai\"\nbase_url = \"{}\"\napi_key = \"sk-backup\"\nmodel = \"backup-model\"\n",
        backup.base_url()
    );
    let mut w = World::new(&config).await;
    w.llm.set_default(|_| {
        Reply::error(
            500,
            json!({"error": {"message": "internal", "type": "server_error"}}),
        )
    });
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "are you there?");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(
        visible(&sent),
        [late_notice(), "from the backup"],
        "one notice, then the answer"
    );
    assert_eq!(
        w.llm.requests().len(),
        2,
        "the main provider was tried and retried once"
    );
    let b = backup.requests();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].model(), Some("backup-model"));
    assert_eq!(b[0].header("authorization"), Some("Bearer sk-backup"));
}

fn late_notice() -> &'static str {
    "⏳ The model provider is slow or failing right now; I'm still trying — the answer may take a little longer."
}
