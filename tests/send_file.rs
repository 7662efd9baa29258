//! Files the agent sends (`send_file`) reach the user on every platform, through the real
//! binary: Telegram as a document or a photo with its caption, Discord as a message attachment,
//! Slack through the external upload flow, email as a MIME attachment; a file arrives once even
//! when the platform fails the first upload, and too-large files are refused with a reason.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::daemon::{ALICE, World};
use support::llm::Reply;
use support::telegram::Fault;
use support::{WAIT, wait_for};

fn png(len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize(len, 7);
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_gets_a_document_and_a_photo_before_the_answer() {
    let mut w = World::new("").await;
    let ws = w.workspace_of("telegram", &ALICE.to_string());
    std::fs::write(ws.join("report.csv"), "a,b\n1,2\n").unwrap();
    std::fs::write(ws.join("chart.png"), png(2048)).unwrap();
    w.llm.push(Reply::tool_calls(vec![
        (
            "send_file",
            json!({"path": "report.csv", "caption": "The **numbers**"}),
        ),
        ("send_file", json!({"path": "chart.png"})),
    ]));
    w.llm.push(Reply::text("Both files are above."));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "send me the report and the chart");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].text, "Both files are above.");

    let files = w.tg.sent_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let doc = files
        .iter()
        .find(|f| f.method == "senddocument")
        .expect("a document");
    assert_eq!(doc.file_name.as_deref(), Some("report.csv"));
    assert_eq!(doc.size, 8);
    assert_eq!(doc.caption.as_deref(), Some("The <b>numbers</b>"));
    assert_eq!(doc.chat_id, ALICE);
    let photo = files
        .iter()
        .find(|f| f.method == "sendphoto")
        .expect("a photo");
    assert_eq!(photo.size, 2048);
    assert!(photo.caption.is_none());
    assert!(
        files.iter().all(|f| f.at <= sent[0].at),
        "files go out before the answer"
    );

    let results = w.llm.requests()[1].tool_results();
    assert!(
        results[0].1.contains("sent report.csv (text/csv, 8 bytes)"),
        "{results:?}"
    );
    assert!(results[1].1.contains("chart.png (image/png"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_upload_is_retried_and_arrives_once_even_if_the_original_is_gone() {
    let mut w = World::new("").await;
    let ws = w.workspace_of("telegram", &ALICE.to_string());
    std::fs::write(ws.join("notes.txt"), "remember the milk").unwrap();
    w.tg.fail_next("senddocument", Fault::DropConnection);
    w.llm
        .push(Reply::tool_call("send_file", json!({"path": "notes.txt"})));
    w.llm.push(Reply::text("Sent."));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "send my notes");
    w.tg.wait_calls("senddocument", 1, WAIT).await;
    // The original goes away before the retry: the outbox holds its own copy.
    std::fs::remove_file(ws.join("notes.txt")).unwrap();
    w.tg.wait_sent(1, WAIT).await;
    let arrived = || (!w.tg.sent_files().is_empty()).then_some(());
    wait_for(WAIT, "the file", arrived, String::new).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let files = w.tg.sent_files();
    assert_eq!(files.len(), 1, "exactly once: {files:?}");
    assert_eq!(files[0].size, "remember the milk".len());
    assert!(
        w.tg.calls_of("senddocument").len() >= 2,
        "the first try failed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_large_and_missing_files_are_refused_with_a_reason() {
    let mut w = World::new("").await;
    let ws = w.workspace_of("telegram", &ALICE.to_string());
    // Sparse: 60 MB on paper, nothing on disk.
    std::fs::File::create(ws.join("huge.bin"))
        .unwrap()
        .set_len(60 * 1024 * 1024)
        .unwrap();
    w.llm.push(Reply::tool_calls(vec![
        ("send_file", json!({"path": "huge.bin"})),
        ("send_file", json!({"path": "missing.pdf"})),
    ]));
    w.llm.push(Reply::text("Could not send them."));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "send the big one");
    w.tg.wait_sent(1, WAIT).await;
    let results = w.llm.requests()[1].tool_results();
    assert!(
        results[0].1.contains("60.0 MB") && results[0].1.contains("at most 50.0 MB"),
        "{results:?}"
    );
    assert!(results[1].1.starts_with("error:"), "{results:?}");
    assert!(w.tg.sent_files().is_empty());
    assert!(w.tg.calls_of("senddocument").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discord_gets_the_file_as_a_message_attachment() {
    use support::discord::{self, ALICE as D_ALICE};
    let (mut w, dc) = discord::world("").await;
    std::fs::write(
        w.workspace_of("discord", &D_ALICE.to_string())
            .join("plan.md"),
        "# Plan\n- step",
    )
    .unwrap();
    w.llm.push(Reply::tool_call(
        "send_file",
        json!({"path": "plan.md", "caption": "your plan"}),
    ));
    w.llm.push(Reply::text("Attached."));
    let daemon = discord::start(&mut w, &dc).await;
    dc.dm(D_ALICE, "Alice", "the plan please");
    let sent = discord::wait_sent(&dc, &daemon, 2).await;
    assert_eq!(sent[0].files, vec![("plan.md".to_owned(), 13)]);
    assert_eq!(sent[0].content, "your plan");
    assert_eq!(sent[1].content, "Attached.");
    assert!(sent[1].files.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_shares_the_file_in_the_thread_with_its_comment() {
    use support::slack::{ALICE as S_ALICE, dm_channel};
    use support::slack::{Mode, SlackWorld};
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    std::fs::write(
        sw.w.workspace_of("slack", S_ALICE).join("data.json"),
        r#"{"ok":true}"#,
    )
    .unwrap();
    sw.w.llm.push(Reply::tool_call(
        "send_file",
        json!({"path": "data.json", "caption": "the *data*"}),
    ));
    sw.w.llm.push(Reply::text("Shared."));
    let _daemon = sw.start().await;
    sw.slack.dm(S_ALICE, "share the data");
    sw.slack.wait_posted(1, WAIT).await;
    let files = sw.slack.shared_files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].name, "data.json");
    assert_eq!(files[0].bytes, br#"{"ok":true}"#);
    assert_eq!(files[0].channel, dm_channel(S_ALICE));
    assert_eq!(files[0].comment.as_deref(), Some("the _data_"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn email_carries_the_file_as_an_attachment_in_the_thread() {
    use mail_parser::MimeHeaders;
    use support::email::{MailWorld, header};
    let mut mw = MailWorld::new("").await;
    let ws = mw.w.workspace_of("email", &mw.alice_addr);
    std::fs::write(ws.join("invoice.pdf"), b"%PDF-1.4 tiny").unwrap();
    mw.w.llm.push(Reply::tool_call(
        "send_file",
        json!({"path": "invoice.pdf", "caption": "Your invoice."}),
    ));
    mw.w.llm
        .push(Reply::text("The invoice is in the other mail."));
    let _d = mw.start().await;
    let alice = mw.alice_addr.clone();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "inv@alice.test", "Invoice", "Send the invoice", ""),
    );
    let mails = mw.wait_mails(&mw.alice, 2, WAIT).await;
    let with_file: Vec<_> = mails
        .iter()
        .filter_map(|raw| mail_parser::MessageParser::default().parse(raw))
        .filter(|m| m.attachment_count() > 0)
        .collect();
    assert_eq!(with_file.len(), 1, "one mail carries the file");
    let m = &with_file[0];
    let a = m.attachment(0).unwrap();
    assert_eq!(a.attachment_name(), Some("invoice.pdf"));
    assert_eq!(a.contents(), b"%PDF-1.4 tiny");
    assert!(m.body_text(0).unwrap().contains("Your invoice."));
    let raw = mails
        .iter()
        .find(|r| String::from_utf8_lossy(r).contains("invoice.pdf"))
        .unwrap();
    assert_eq!(
        header(raw, "In-Reply-To").as_deref(),
        Some("<inv@alice.test>")
    );
    assert_eq!(header(raw, "Subject").as_deref(), Some("Re: Invoice"));
}
