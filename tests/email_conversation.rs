//! The Email adapter end to end through the real binary, against a real Dovecot (IMAP + LMTP)
//! and an SMTP front on 127.0.0.1: replies threaded in Alice's mailbox, sessions continued by
//! thread, the never-answer rules, charsets, HTML-only mail and oversized attachments.
//!
//! Needs the mail servers: run `.ci/mail-servers` first (as root; `.ci/run` does it). Without
//! them these tests fail with that instruction; they never skip silently.

use crate::support;

use std::time::Instant;

use serde_json::json;
use support::email::{MailWorld, body_text, header};
use support::llm::Reply;
use support::{LONG_WAIT, WAIT, wait_for};

/// Far longer than any test: a reply within WAIT proves IDLE, not polling.
const CONFIG: &str = "[email]\npoll_secs = 600\n";

#[tokio::test]
async fn alice_gets_a_threaded_reply_within_seconds() {
    let mut mw = MailWorld::new(CONFIG).await;
    mw.w.set_env("EMAIL_SENT_FOLDER", "Sent");
    let _d = mw.start().await;
    let alice = mw.alice_addr.clone();
    let started = Instant::now();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(
            &alice,
            "first@alice.test",
            "Hello there",
            "What is 2+2?",
            "",
        ),
    );
    let replies = mw.wait_mails(&mw.alice, 1, WAIT).await;
    let took = started.elapsed();
    eprintln!("reply in alice's mailbox after {took:?}");
    let r = &replies[0];
    assert_eq!(header(r, "Subject").as_deref(), Some("Re: Hello there"));
    assert_eq!(
        header(r, "In-Reply-To").as_deref(),
        Some("<first@alice.test>")
    );
    assert!(
        header(r, "References")
            .unwrap()
            .contains("<first@alice.test>")
    );
    let id = header(r, "Message-ID").expect("a Message-ID");
    assert!(
        id.ends_with("@localhost>") && id != "<first@alice.test>",
        "{id}"
    );
    assert!(header(r, "From").unwrap().contains(&mw.bot_addr));
    assert_eq!(header(r, "Auto-Submitted").as_deref(), Some("auto-replied"));
    let text = String::from_utf8_lossy(r);
    assert!(text.contains("multipart/alternative"), "{text}");
    assert!(
        text.contains("text/plain") && text.contains("text/html"),
        "{text}"
    );
    assert!(body_text(r).contains("echo:"), "{text}");
    // A copy went to the bot's Sent folder.
    let sent = mw
        .mail
        .data
        .join("mail")
        .join(&mw.bot)
        .join("Maildir/.Sent/cur");
    let copied = || (std::fs::read_dir(&sent).map_or(0, |d| d.count()) > 0).then_some(());
    let what = format!("a copy in {}", sent.display());
    wait_for(WAIT, &what, copied, || mw.w.logs()).await;
    // The model saw the body, labelled as untrusted.
    let reqs = mw.w.llm.requests();
    assert_eq!(reqs.len(), 1);
    let user = reqs[0].last_user_text().unwrap();
    assert!(
        user.contains("What is 2+2?") && user.contains("untrusted"),
        "{user}"
    );
}

#[tokio::test]
async fn a_reply_in_the_thread_continues_the_session() {
    let mut mw = MailWorld::new(CONFIG).await;
    let _d = mw.start().await;
    let alice = mw.alice_addr.clone();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(
            &alice,
            "t1@alice.test",
            "Plans",
            "My cat is called Miso.",
            "",
        ),
    );
    let first = mw.wait_mails(&mw.alice, 1, WAIT).await;
    let bot_id = header(&first[0], "Message-ID").unwrap();
    let extra = format!("In-Reply-To: {bot_id}\r\nReferences: <t1@alice.test> {bot_id}\r\n");
    mw.send_to_bot(
        &alice,
        &mw.text_mail(
            &alice,
            "t2@alice.test",
            "Re: Plans",
            "What is my cat called?\r\n\r\nOn Sun, bot wrote:\r\n> echo: quoted history",
            &extra,
        ),
    );
    let replies = mw.wait_mails(&mw.alice, 2, WAIT).await;
    let r = &replies[1];
    assert_eq!(header(r, "Subject").as_deref(), Some("Re: Plans"));
    assert_eq!(header(r, "In-Reply-To").as_deref(), Some("<t2@alice.test>"));
    let refs = header(r, "References").unwrap();
    assert!(
        refs.contains("<t1@alice.test>")
            && refs.contains(&bot_id)
            && refs.contains("<t2@alice.test>"),
        "{refs}"
    );
    let reqs = mw.w.llm.requests();
    assert_eq!(reqs.len(), 2);
    let history = serde_json::to_string(&reqs[1].messages()).unwrap();
    assert!(
        history.contains("Miso"),
        "the agent sees the earlier exchange: {history}"
    );
    let last = reqs[1].last_user_text().unwrap();
    assert!(
        !last.contains("quoted history"),
        "quoted history is trimmed: {last}"
    );
}

#[tokio::test]
async fn two_new_mails_sent_back_to_back_are_each_answered_in_their_own_thread() {
    // Once: the second mail interrupted the first one's turn and they were answered together,
    // once, in the second's thread. A new mail thread is a conversation of its own.
    let mut mw = MailWorld::new(CONFIG).await;
    let gate = support::llm::Gate::new();
    mw.w.llm
        .push(Reply::text("About the invoice: paid.").after(gate.clone()));
    mw.w.llm.push(Reply::text("About the trip: booked."));
    let _d = mw.start().await;
    let alice = mw.alice_addr.clone();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "inv@alice.test", "Invoice", "Was it paid?", ""),
    );
    mw.w.llm.wait_requests(1, WAIT).await;
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "trip@alice.test", "Trip", "Is it booked?", ""),
    );
    mw.w.llm.wait_requests(2, WAIT).await;
    gate.open();
    let replies = mw.wait_mails(&mw.alice, 2, WAIT).await;
    let mut threads: Vec<(String, String)> = replies
        .iter()
        .map(|r| {
            (
                header(r, "In-Reply-To").unwrap_or_default(),
                body_text(r).lines().next().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    threads.sort();
    assert_eq!(
        threads,
        [
            ("<inv@alice.test>".into(), "About the invoice: paid.".into()),
            ("<trip@alice.test>".into(), "About the trip: booked.".into()),
        ]
    );
    let asked: Vec<String> =
        mw.w.llm
            .requests()
            .iter()
            .map(|r| r.last_user_text().unwrap_or_default())
            .collect();
    assert!(
        asked[0].contains("Was it paid?") && !asked[0].contains("Is it booked?"),
        "{asked:?}"
    );
    assert!(
        asked[1].contains("Is it booked?") && !asked[1].contains("Was it paid?"),
        "each thread on its own: {asked:?}"
    );
}

#[tokio::test]
async fn loops_lists_bounces_and_strangers_get_no_reply_and_no_model_call() {
    let mut mw = MailWorld::new(CONFIG).await;
    let _d = mw.start().await;
    let alice = mw.alice_addr.clone();
    let mallory = mw.mallory_addr.clone();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(
            &alice,
            "auto@alice.test",
            "Out of office",
            "I am away",
            "Auto-Submitted: auto-replied\r\n",
        ),
    );
    mw.send_to_bot(
        &alice,
        &mw.text_mail(
            &alice,
            "bulk@alice.test",
            "News",
            "bulk",
            "Precedence: bulk\r\n",
        ),
    );
    mw.send_to_bot(
        &alice,
        &mw.text_mail(
            &alice,
            "list@alice.test",
            "[list] hi",
            "list mail",
            "List-Id: <dev.lists.test>\r\n",
        ),
    );
    let daemon = "MAILER-DAEMON@localhost";
    mw.send_to_bot(
        daemon,
        &mw.text_mail(
            daemon,
            "bounce@x.test",
            "Undelivered Mail Returned to Sender",
            "bounce",
            "",
        ),
    );
    mw.send_to_bot(
        &mallory,
        &mw.text_mail(&mallory, "m@mallory.test", "hi", "let me in", ""),
    );
    mw.send_to_bot(
        &mw.bot_addr.clone(),
        &mw.text_mail(&mw.bot_addr, "self@bot.test", "loop", "myself", ""),
    );
    // A normal mail after all of them: once it is answered, the others were seen and skipped.
    mw.only_the_sentinel_is_answered().await;
}

#[tokio::test]
async fn html_only_legacy_charsets_and_a_huge_attachment_are_handled() {
    let mut mw = MailWorld::new(CONFIG).await;
    let d = mw.start().await;
    let alice = mw.alice_addr.clone();
    let bot = mw.bot_addr.clone();
    let html = format!(
        "From: <{alice}>\r\nTo: <{bot}>\r\nSubject: html\r\nMessage-ID: <h@alice.test>\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body><p>Only <b>HTML</b> here</p><script>x</script></body></html>\r\n"
    );
    // One at a time: mails arriving together in one session are answered together.
    mw.send_to_bot(&alice, html.as_bytes());
    mw.wait_mails(&mw.alice, 1, WAIT).await;
    // "你好" in GBK, quoted-printable.
    let gbk = format!(
        "From: <{alice}>\r\nTo: <{bot}>\r\nSubject: gbk\r\nMessage-ID: <g@alice.test>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=GBK\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\ngreeting =C4=E3=BA=C3\r\n"
    );
    mw.send_to_bot(&alice, gbk.as_bytes());
    mw.wait_mails(&mw.alice, 2, WAIT).await;
    let mut latin = format!(
        "From: <{alice}>\r\nTo: <{bot}>\r\nSubject: latin\r\nMessage-ID: <l@alice.test>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=ISO-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\nCaf"
    )
    .into_bytes();
    latin.extend_from_slice(b"\xe9 cr\xe8me\r\n");
    mw.send_to_bot(&alice, &latin);
    mw.wait_mails(&mw.alice, 3, WAIT).await;
    // 15 MB attachment, base64.
    let blob = vec![b'A'; 15 * 1024 * 1024];
    let b64: String = blob
        .chunks(57)
        .map(|c| {
            let mut s = String::new();
            for q in c.chunks(3) {
                let n = (u32::from(q[0]) << 16) | (u32::from(q[1]) << 8) | u32::from(q[2]);
                for i in (0..4).rev() {
                    let v = (n >> (6 * i)) & 63;
                    s.push(
                        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                            [v as usize] as char,
                    );
                }
            }
            s + "\r\n"
        })
        .collect();
    let big = format!(
        "From: <{alice}>\r\nTo: <{bot}>\r\nSubject: big file\r\nMessage-ID: <big@alice.test>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n--XX\r\nContent-Type: application/octet-stream; name=huge.bin\r\nContent-Disposition: attachment; filename=huge.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n{b64}--XX--\r\n"
    );
    mw.send_to_bot(&alice, big.as_bytes());
    // Four answers plus the note about the refused attachment.
    let mails = mw.wait_mails(&mw.alice, 5, LONG_WAIT).await;
    let reqs = mw.w.llm.wait_requests(4, WAIT).await;
    let seen: Vec<String> = reqs.iter().map(|r| r.last_user_text().unwrap()).collect();
    let all = seen.join("\n");
    assert!(
        all.contains("Only HTML here") || all.contains("Only **HTML** here"),
        "{all}"
    );
    assert!(!all.contains("<script>") && !all.contains("<p>"), "{all}");
    assert!(all.contains("greeting 你好"), "{all}");
    assert!(all.contains("Café crème"), "{all}");
    assert!(all.contains("huge.bin") && all.contains("refused"), "{all}");
    let note = mails
        .iter()
        .map(|m| body_text(m))
        .find(|m| m.contains("were not read"))
        .expect("a note about the refused attachment");
    assert!(note.contains("huge.bin"), "{note}");
    let mut d = d;
    assert!(d.is_running(), "daemon survived; log:\n{}", d.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_is_answered_by_replying_yes_to_the_request_mail() {
    let mut mw = MailWorld::new(CONFIG).await;
    mw.w.llm.echo_tool_results();
    mw.w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo approved-$((40 + 2))"}),
    ));
    let _d = mw.start().await;
    let alice = mw.alice_addr.clone();
    let (request, subject, extra) = mw.ask_for_a_confirmation().await;
    let body = body_text(&request);
    assert!(
        body.contains("Permission needed") && body.contains("terminal"),
        "{body}"
    );
    mw.send_to_bot(
        &alice,
        &mw.text_mail(
            &alice,
            "ap2@alice.test",
            &subject,
            "Yes\r\n\r\nOn Sun, bot wrote:\r\n> Permission needed",
            &extra,
        ),
    );
    let mails = mw.wait_mails(&mw.alice, 2, WAIT).await;
    let texts: Vec<String> = mails.iter().map(|m| body_text(m)).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("tool said:") && t.contains("approved-42")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn without_idle_the_mailbox_is_polled() {
    let mut mw = MailWorld::new("[email]\nforce_poll = true\npoll_secs = 1\n").await;
    let d = mw.start().await;
    assert!(d.log().contains("idle=false"), "{}", d.log());
    let alice = mw.alice_addr.clone();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "p1@alice.test", "Poll", "polled", ""),
    );
    let replies = mw.wait_mails(&mw.alice, 1, WAIT).await;
    assert_eq!(
        header(&replies[0], "In-Reply-To").as_deref(),
        Some("<p1@alice.test>")
    );
}
