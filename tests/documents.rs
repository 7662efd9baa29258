//! Documents sent with a message reach the model as their text, through the real binary: PDF,
//! Word, Excel, OpenDocument and PowerPoint files written by their real producers
//! (`tests/fixtures/documents/make.py`) sent on Telegram, Slack and email; a scan, a damaged
//! file and a 50 MB PDF; and the `read_document` tool on a file of the workspace.
//!
//! The email test needs the mail servers: run `.ci/mail-servers` first (`.ci/run` does it).

use crate::support;

use base64::Engine;
use serde_json::json;
use support::daemon::{ALICE, World};
use support::email::MailWorld;
use support::llm::Reply;
use support::slack::{Mode, SlackWorld};
use support::{LONG_WAIT, WAIT};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/documents/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Alice sends `bytes` as a Telegram document named `name`, with a caption.
fn send_document(w: &World, id: i64, name: &str, mime: &str, bytes: Vec<u8>, size: usize) {
    let file_id = format!("doc-{id}");
    w.tg.add_file(&file_id, bytes);
    w.tg.push_update(json!({"message": {
        "message_id": id, "date": 1_700_000_000,
        "chat": {"id": ALICE, "type": "private", "first_name": "Alice"},
        "from": {"id": ALICE, "is_bot": false, "first_name": "Alice"},
        "caption": format!("summarise {name}"),
        "document": {"file_id": file_id, "file_unique_id": format!("u{id}"), "file_name": name,
            "mime_type": mime, "file_size": size}
    }}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_office_format_sent_on_telegram_reaches_the_model_as_text() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    let cases = [
        (
            "report.pdf",
            "application/pdf",
            &[
                "PDF-PAGE-ONE-ALPHA",
                "PDF-PAGE-THREE-CHARLIE",
                "Zürich office",
            ][..],
        ),
        (
            "memo.docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            &["DOCX-BODY-DELTA", "Lisbon | 42 DOCX-TABLE-ECHO"],
        ),
        (
            "budget.xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            &[
                "XLSX-COSTS-FOXTROT",
                "sheet 2 \"Revenue\"",
                "XLSX-REVENUE-GOLF",
            ],
        ),
        (
            "budget.ods",
            "application/vnd.oasis.opendocument.spreadsheet",
            &["March\tODS-HOTEL"],
        ),
        (
            "deck.pptx",
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            &["--- slide 2 ---", "PPTX-SLIDE-TWO-JULIET"],
        ),
    ];
    for (i, (name, mime, markers)) in cases.iter().enumerate() {
        let bytes = fixture(name);
        let size = bytes.len();
        send_document(&w, 100 + i as i64, name, mime, bytes, size);
        w.tg.wait_sent(i + 1, WAIT).await;
        let text = w.llm.requests()[i].last_user_text().unwrap();
        assert!(text.starts_with(&format!("summarise {name}")), "{text}");
        assert!(
            text.contains(&format!("<document name=\"{name}\">")),
            "{text}"
        );
        for marker in *markers {
            assert!(
                text.contains(marker),
                "{name}: {marker} missing from {text}"
            );
        }
        assert!(!text.contains("You cannot open attachments"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_and_a_damaged_file_are_explained_to_the_model_and_the_turn_goes_on() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    let scan = fixture("scanned.pdf");
    let size = scan.len();
    send_document(&w, 200, "invoice.pdf", "application/pdf", scan, size);
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert!(sent[0].visible_text.starts_with("echo:"), "{:?}", sent[0]);
    let text = w.llm.requests()[0].last_user_text().unwrap();
    assert!(text.contains("scanned PDF without a text layer"), "{text}");

    let mut broken = fixture("memo.docx");
    broken.truncate(broken.len() / 2);
    let size = broken.len();
    send_document(
        &w,
        201,
        "memo.docx",
        "application/octet-stream",
        broken,
        size,
    );
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(sent[1].visible_text.starts_with("echo:"), "{:?}", sent[1]);
    let text = w.llm.requests()[1].last_user_text().unwrap();
    assert!(
        text.contains(
            "[document \"memo.docx\" (Word document) could not be read: the file is damaged"
        ),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_pdf_is_refused_with_a_note_and_costs_no_model_call() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    let mut big = fixture("report.pdf");
    big.resize(50 * 1024 * 1024, b' ');
    let size = big.len();
    w.tg.add_file("doc-big", big);
    w.tg.push_update(json!({"message": {
        "message_id": 300, "date": 1_700_000_000,
        "chat": {"id": ALICE, "type": "private", "first_name": "Alice"},
        "from": {"id": ALICE, "is_bot": false, "first_name": "Alice"},
        "document": {"file_id": "doc-big", "file_unique_id": "ubig", "file_name": "annual.pdf",
            "mime_type": "application/pdf", "file_size": size}
    }}));
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert!(
        sent[0]
            .visible_text
            .contains("I did not read \"annual.pdf\" (50.0 MB)"),
        "{:?}",
        sent[0]
    );
    assert!(
        sent[0].visible_text.contains("up to 20.0 MB"),
        "{:?}",
        sent[0]
    );
    // The next message is answered by the model, which never saw the refused file.
    w.tg.private_text(ALICE, "Alice", "ok");
    w.tg.wait_sent(2, WAIT).await;
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 1, "the refused file cost a model call");
    assert!(
        !reqs[0]
            .messages()
            .iter()
            .any(|m| m.to_string().contains("annual.pdf"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_document_shared_on_slack_reaches_the_model() {
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    let url = sw.slack.add_file("memo.docx", fixture("memo.docx"));
    let _daemon = sw.start().await;
    let (mut cb, _) = sw
        .slack
        .dm_event(support::slack::ALICE, "what does the memo propose?");
    cb["event"]["subtype"] = json!("file_share");
    cb["event"]["files"] = json!([{"id": "F1", "name": "memo.docx",
        "mimetype": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "size": 36912, "url_private": url, "url_private_download": url}]);
    sw.slack.envelope("events_api", cb);
    sw.slack.wait_posted(1, WAIT).await;
    let text = sw.w.llm.requests()[0].last_user_text().unwrap();
    assert!(text.contains("# Board memo"), "{text}");
    assert!(text.contains("DOCX-BODY-DELTA"), "{text}");
}

#[tokio::test]
async fn a_spreadsheet_attached_to_an_email_reaches_the_model() {
    let mut mw = MailWorld::new("[email]\npoll_secs = 600\n").await;
    let _d = mw.start().await;
    let (alice, bot) = (mw.alice_addr.clone(), mw.bot_addr.clone());
    let b64 = base64::engine::general_purpose::STANDARD.encode(fixture("budget.xlsx"));
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let mail = format!(
        "From: <{alice}>\r\nTo: <{bot}>\r\nSubject: budget\r\nMessage-ID: <xlsx@alice.test>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain\r\n\r\nthe numbers\r\n--XX\r\nContent-Type: application/vnd.openxmlformats-officedocument.spreadsheetml.sheet; name=budget.xlsx\r\nContent-Disposition: attachment; filename=budget.xlsx\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n--XX--\r\n",
        lines.join("\r\n")
    );
    mw.send_to_bot(&alice, mail.as_bytes());
    mw.wait_mails(&mw.alice, 1, LONG_WAIT).await;
    let text = mw.w.llm.requests()[0].last_user_text().unwrap();
    assert!(text.contains("the numbers"), "{text}");
    assert!(text.contains("Rent\t1200"), "{text}");
    assert!(text.contains("XLSX-REVENUE-GOLF"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_document_reads_a_page_range_of_a_workspace_pdf() {
    let mut w = World::new("").await;
    let dir = w.workspace_of("telegram", &ALICE.to_string());
    std::fs::create_dir_all(dir.join("reports")).unwrap();
    std::fs::write(dir.join("reports/q3.pdf"), fixture("report.pdf")).unwrap();
    w.llm.push(Reply::tool_calls(vec![
        (
            "read_document",
            json!({"path": "reports/q3.pdf", "from": 2, "to": 2}),
        ),
        ("read_document", json!({"path": "../../hermes.db"})),
    ]));
    w.llm.push(Reply::text("page two says costs fell"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "what is on page 2 of q3?");
    w.tg.wait_sent(1, WAIT).await;
    let results = w.llm.requests()[1].tool_result_texts();
    assert!(results[0].contains("--- page 2 ---"), "{}", results[0]);
    assert!(results[0].contains("PDF-PAGE-TWO-BRAVO"), "{}", results[0]);
    assert!(!results[0].contains("ALPHA"), "{}", results[0]);
    assert!(
        results[0].contains("Showing pages 2-2 of 3"),
        "{}",
        results[0]
    );
    assert!(results[1].starts_with("error"), "{}", results[1]);
}
