//! Telegram webhook mode end to end through the real binary: the daemon registers its URL and
//! secret with `setWebhook`, the fake Telegram POSTs updates to it like Telegram does, and the
//! answers, refusals (401, 400, 413) and deduplication of redelivered updates are checked
//! against what the fake saw.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::WAIT;
use support::daemon::{ALICE, Daemon, World};
use support::http::free_port;
use support::telegram::visible;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "configured-webhook-Secret_42";

/// A world whose daemon runs in webhook mode on a free loopback port, with `secret` (or a
/// generated one).
async fn webhook_world(secret: Option<&str>) -> World {
    let mut w = World::new("").await;
    let port = free_port();
    w.set_env("TELEGRAM_MODE", "webhook");
    w.set_env(
        "TELEGRAM_WEBHOOK_URL",
        &format!("http://127.0.0.1:{port}/telegram"),
    );
    w.set_env("TELEGRAM_WEBHOOK_LISTEN", &format!("127.0.0.1:{port}"));
    if let Some(s) = secret {
        w.set_env("TELEGRAM_WEBHOOK_SECRET", s);
    }
    w
}

/// Start the daemon and wait until it registered its webhook (the port is bound before that).
async fn start(w: &mut World) -> Daemon {
    let registered = |tg: &support::telegram::FakeTelegram| {
        tg.calls_of("setwebhook")
            .iter()
            .filter(|c| c.status == 200)
            .count()
    };
    let before = registered(&w.tg);
    let tg = w.tg.clone();
    w.start_when("its webhook registered", move || registered(&tg) > before)
        .await
}

/// Nothing more is sent for a moment after `n` messages.
async fn settle_at(w: &World, n: usize) {
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(w.tg.sent().len(), n, "{:?}", visible(&w.tg.sent()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_registers_its_webhook_answers_pushed_updates_and_leaves_it_set_at_shutdown() {
    let mut w = webhook_world(Some(SECRET)).await;
    let mut daemon = start(&mut w).await;
    let hook = w.tg.webhook().expect("a webhook is set");
    assert!(hook.url.ends_with("/telegram"), "{}", hook.url);
    assert_eq!(hook.secret_token.as_deref(), Some(SECRET));
    assert_eq!(
        hook.allowed_updates.as_deref(),
        Some(&["message".to_owned(), "callback_query".to_owned()][..])
    );
    assert!(!hook.drop_pending_updates);
    assert!(w.tg.calls_of("getupdates").is_empty(), "no polling");
    assert!(w.tg.calls_of("deletewebhook").is_empty());

    let first = w.tg.private_text(ALICE, "Alice", "hello by webhook");
    assert_eq!(w.tg.post_update(first.update_id).await, 200);
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].chat_id, ALICE);
    assert_eq!(sent[0].visible_text, "echo: hello by webhook");
    assert_eq!(w.tg.pending_updates(), 0, "acknowledged with 200");

    // `hermes status` sees the listener up.
    let (_, out, err) = w.run(&["status"]);
    let state = out
        .lines()
        .find_map(|l| l.strip_prefix("telegram:"))
        .and_then(|rest| rest.split_whitespace().next());
    assert_eq!(state, Some("up"), "{out}{err}");

    // `hermes doctor` asks Telegram about the webhook.
    let (_, out, err) = w.run(&["doctor"]);
    assert!(
        out.contains("webhook mode: registered, 0 update(s) pending"),
        "{out}{err}"
    );

    let log = daemon.log();
    assert!(log.contains("Telegram connected (webhook)"), "{log}");
    assert!(!log.contains(SECRET), "webhook secret in the log");

    // A clean stop leaves the webhook for other processes behind the balancer.
    assert!(daemon.terminate(WAIT).success());
    assert!(w.tg.calls_of("deletewebhook").is_empty());
    assert!(w.tg.webhook().is_some());

    // Back to polling: the webhook is deleted and getUpdates works.
    w.set_env("TELEGRAM_MODE", "polling");
    let _polling = w.start().await;
    assert_eq!(w.tg.calls_of("deletewebhook").len(), 1);
    assert!(w.tg.webhook().is_none());
    w.tg.private_text(ALICE, "Alice", "hello by polling");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent[1].visible_text, "echo: hello by polling");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_the_right_secret_are_refused_and_not_answered() {
    let mut w = webhook_world(Some(SECRET)).await;
    let _daemon = start(&mut w).await;
    let forged = w.tg.private_text(ALICE, "Alice", "forged");
    let body = w.tg.update_json(forged.update_id).to_string();
    assert_eq!(w.tg.post_raw(body.clone(), None).await, 401, "no secret");
    assert_eq!(
        w.tg.post_raw(body.clone(), Some("configured-webhook-Secret_43"))
            .await,
        401,
        "a secret one character off"
    );
    assert_eq!(w.tg.post_raw(body, Some("")).await, 401, "an empty secret");

    let genuine = w.tg.private_text(ALICE, "Alice", "genuine");
    assert_eq!(w.tg.post_update(genuine.update_id).await, 200);
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "echo: genuine");
    settle_at(&w, 1).await;
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 1, "the refused requests stored nothing");
    assert!(!reqs[0].user_texts().iter().any(|t| t.contains("forged")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_update_is_answered_once() {
    let mut w = webhook_world(Some(SECRET)).await;
    let _daemon = start(&mut w).await;
    let once = w.tg.private_text(ALICE, "Alice", "only once please");
    // Telegram redelivers (a lost 200), or two processes behind a balancer get the same update.
    let (a, b) = tokio::join!(
        w.tg.post_update(once.update_id),
        w.tg.post_update(once.update_id)
    );
    assert_eq!((a, b), (200, 200));
    assert_eq!(w.tg.post_update(once.update_id).await, 200);
    w.tg.wait_sent(1, WAIT).await;
    // A later update is answered, and the copies have not produced anything meanwhile.
    let next = w.tg.private_text(ALICE, "Alice", "next");
    assert_eq!(w.tg.post_update(next.update_id).await, 200);
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(
        visible(&sent),
        ["echo: only once please", "echo: next"],
        "in order, each once"
    );
    settle_at(&w, 2).await;
    assert_eq!(w.llm.requests().len(), 2);

    // A redelivered button press: its callback query is answered once (before the 200).
    let press =
        w.tg.callback_query(ALICE, ALICE, sent[0].message_id, "noop");
    for _ in 0..2 {
        assert_eq!(w.tg.post_update(press.update_id).await, 200);
    }
    let answers = w.tg.calls_of("answercallbackquery");
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_answered_200_survives_a_kill_and_its_redelivery_is_not_answered_again() {
    let mut w = webhook_world(Some(SECRET)).await;
    let mut daemon = start(&mut w).await;
    let update = w.tg.private_text(ALICE, "Alice", "acked then killed");
    assert_eq!(w.tg.post_update(update.update_id).await, 200);
    // Killed the moment Telegram has its 200 (long before its turn could be answered, as a
    // rule): the update must already be stored for the next process to answer it.
    daemon.kill();

    let _daemon = start(&mut w).await;
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "echo: acked then killed");
    // Telegram may not have seen that 200 and sends the update again: stored once, answered once.
    assert_eq!(w.tg.post_update(update.update_id).await, 200);
    let sentinel = w.tg.private_text(ALICE, "Alice", "sentinel");
    assert_eq!(w.tg.post_update(sentinel.update_id).await, 200);
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(
        visible(&sent),
        ["echo: acked then killed", "echo: sentinel"]
    );
    settle_at(&w, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_requests_are_refused_and_the_daemon_keeps_serving() {
    let mut w = webhook_world(Some(SECRET)).await;
    let mut daemon = start(&mut w).await;
    assert_eq!(w.tg.post_raw("{not json", Some(SECRET)).await, 400);
    assert_eq!(
        w.tg.post_raw(r#"{"hello":"no update_id"}"#, Some(SECRET))
            .await,
        400
    );
    assert_eq!(w.tg.post_raw(vec![0xff, 0xfe], Some(SECRET)).await, 400);
    // A body over the bound is refused from its announced length, before it is read.
    let url = w.tg.webhook().unwrap().url;
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/telegram");
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /telegram HTTP/1.1\r\nHost: {addr}\r\n{}: {SECRET}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        support::telegram::SECRET_HEADER,
        2 << 20
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 64];
    let n = tokio::time::timeout(WAIT, conn.read(&mut answer))
        .await
        .expect("an answer without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // Only POST, only on the webhook's path.
    let client = reqwest::Client::new();
    let get = client.get(&url).send().await.unwrap().status().as_u16();
    assert_eq!(get, 405);
    let other = client
        .post(url.replace("/telegram", "/other"))
        .header(support::telegram::SECRET_HEADER, SECRET)
        .body("{}")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(other, 404);
    // An update of a kind hermes skips is acknowledged, so Telegram does not hold the queue.
    let edited =
        w.tg.push_update(json!({"edited_message": {"message_id": 5, "date": 0,
        "chat": {"id": ALICE, "type": "private"}, "text": "edited"}}));
    assert_eq!(w.tg.post_update(edited.update_id).await, 200);

    let fine = w.tg.private_text(ALICE, "Alice", "still serving?");
    assert_eq!(w.tg.post_update(fine.update_id).await, 200);
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "echo: still serving?");
    settle_at(&w, 1).await;
    assert!(daemon.is_running());
    assert!(!daemon.log().contains("no update_id"), "no body in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_secret_is_registered_required_and_new_at_each_start() {
    let mut w = webhook_world(None).await;
    let mut daemon = start(&mut w).await;
    let secret = w.tg.webhook().unwrap().secret_token.expect("a secret");
    assert!(
        secret.len() >= 32 && secret.chars().all(|c| c.is_ascii_alphanumeric()),
        "{secret}"
    );
    let hello = w.tg.private_text(ALICE, "Alice", "hello");
    let body = w.tg.update_json(hello.update_id).to_string();
    assert_eq!(w.tg.post_raw(body, None).await, 401);
    assert_eq!(w.tg.post_update(hello.update_id).await, 200);
    assert_eq!(w.tg.wait_sent(1, WAIT).await[0].visible_text, "echo: hello");
    assert!(
        !daemon.log().contains(&secret),
        "generated secret in the log"
    );
    assert!(daemon.terminate(WAIT).success());

    let _again = start(&mut w).await;
    let renewed = w.tg.webhook().unwrap().secret_token.expect("a secret");
    assert_ne!(renewed, secret);
    let later = w.tg.private_text(ALICE, "Alice", "later");
    let body = w.tg.update_json(later.update_id).to_string();
    assert_eq!(
        w.tg.post_raw(body, Some(&secret)).await,
        401,
        "the old secret is refused"
    );
    assert_eq!(w.tg.post_update(later.update_id).await, 200);
    assert_eq!(w.tg.wait_sent(2, WAIT).await[1].visible_text, "echo: later");
}
