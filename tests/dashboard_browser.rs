//! The dashboard in a real browser: Debian's headless Chromium driven over WebDriver
//! (chromedriver, with fantoccini) against the real binary and the fake Telegram. A wrong key
//! shows an error and no page data; signed in, the overview shows the Telegram adapter
//! connected, a conversation held through the fake opens as a transcript, a pending terminal
//! call is allowed from the page and the chat gets its answer; the skills, MCP and chat pages
//! (a message typed in the chat page is answered, streamed in by the page's script). Each page is
//! saved as a
//! screenshot under `target/dashboard-screenshots/` (CI keeps them as artifacts), and the
//! overview once more at a phone's width.
//!
//! Needs /usr/bin/chromium and /usr/bin/chromedriver (`.ci/test` installs them).

use crate::support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use support::daemon::{ALICE, World};
use support::llm::Reply;
use support::{WAIT, wait_for};

const ADMIN: &str = "admin-test-token-0123456789";

/// chromedriver, stopped with the test.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn shots() -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("dashboard-screenshots");
    std::fs::create_dir_all(&dir).expect("the screenshot folder");
    dir
}

async fn browser(profile: &std::path::Path) -> (Driver, Client) {
    for bin in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
        assert!(
            std::path::Path::new(bin).exists(),
            "{bin} is missing: run .ci/test (it installs Debian's chromium and chromium-driver)"
        );
    }
    let port = support::http::free_port();
    let driver = Driver(
        Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver"),
    );
    wait_for(
        WAIT,
        "chromedriver listening",
        || {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(drop)
        },
        || "nothing on its port".to_owned(),
    )
    .await;
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", format!("--user-data-dir={}", profile.display())],
        }),
    );
    // Both of rustls' providers are in the tree; pick the daemon's.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let client = ClientBuilder::rustls()
        .expect("a TLS setup (unused: everything is http on 127.0.0.1)")
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a Chromium session");
    (driver, client)
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.expect("a screenshot");
    std::fs::write(shots().join(format!("{name}.png")), png).expect("save the screenshot");
}

/// Click what `at` finds.
async fn click(c: &Client, at: Locator<'_>) {
    c.find(at)
        .await
        .expect("the element")
        .click()
        .await
        .expect("a click");
}

/// Type `key` into the sign-in form and send it.
async fn sign_in(c: &Client, key: &str) {
    let field = c.find(Locator::Css("input[name=key]")).await.unwrap();
    field.send_keys(key).await.unwrap();
    click(c, Locator::Css("form button")).await;
}

/// Wait until the page's HTML holds `needle`.
async fn page_with(c: &Client, needle: &str) -> String {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let html = c.source().await.expect("the page");
        if html.contains(needle) {
            return html;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {needle:?} in {html}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_uses_the_dashboard_in_chromium() {
    let api_port = support::http::free_port();
    let mut w = World::new("[api.keys.ops]\ntoken_env = \"OPS_KEY\"\noperator = true\n").await;
    w.set_env("HERMES_ADMIN_TOKEN", ADMIN);
    w.set_env("OPS_KEY", "ops-api-key-0123456789abcdef");
    w.set_env("HERMES_API_LISTEN", &format!("127.0.0.1:{api_port}"));
    w.llm.echo_tool_results();
    let _daemon = w.start_logging("HTTP API listening").await;
    w.llm.push(Reply::text("Hello Alice, nice to meet you."));
    w.tg.private_text(ALICE, "Alice", "hi, I am Alice");
    w.tg.wait_sent(1, WAIT).await;
    let base = w.admin_url().await;
    let profile = tempfile::tempdir().unwrap();
    let (_driver, c) = browser(profile.path()).await;

    // Not signed in: the sign-in page. A wrong key: an error, no page data.
    c.goto(&format!("{base}/")).await.unwrap();
    page_with(&c, "Sign in").await;
    shot(&c, "1-sign-in").await;
    sign_in(&c, "wrong-key-0123456789").await;
    let refused = page_with(&c, "not one that opens the dashboard").await;
    assert!(!refused.contains("telegram"), "no page data: {refused}");
    shot(&c, "2-wrong-key").await;

    sign_in(&c, ADMIN).await;
    page_with(&c, "<td>telegram</td><td>connected</td>").await;
    shot(&c, "3-overview").await;

    click(&c, Locator::LinkText("Conversations")).await;
    page_with(&c, &format!("telegram:{ALICE}")).await;
    shot(&c, "4-conversations").await;
    click(&c, Locator::LinkText(&format!("telegram:{ALICE}"))).await;
    page_with(&c, "Hello Alice, nice to meet you.").await;
    shot(&c, "5-conversation").await;

    // A pending terminal call, allowed from the page.
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo browser-ok-$((40 + 2))"}),
    ));
    w.tg.private_text(ALICE, "Alice", "run the check");
    w.tg.wait_sent(2, WAIT).await;
    click(&c, Locator::LinkText("Approvals")).await;
    page_with(&c, "echo browser-ok-$((40 + 2))").await;
    shot(&c, "6-approvals").await;
    click(&c, Locator::Css("button.allow")).await;
    page_with(&c, "Nothing is waiting").await;
    wait_for(
        WAIT,
        "the allowed command's output in the chat",
        || {
            w.tg.sent()
                .iter()
                .any(|m| m.visible_text.contains("browser-ok-42"))
                .then_some(())
        },
        || format!("{:?}", w.tg.sent()),
    )
    .await;

    click(&c, Locator::LinkText("Jobs")).await;
    page_with(&c, "No scheduled jobs").await;
    shot(&c, "7-jobs").await;

    click(&c, Locator::LinkText("Skills")).await;
    page_with(&c, "hermes-operations").await;
    shot(&c, "9-skills").await;
    click(&c, Locator::LinkText("hermes-operations")).await;
    page_with(&c, "Instructions").await;
    click(&c, Locator::Css("form.inline button")).await;
    page_with(&c, "<td>off</td>").await;
    click(&c, Locator::LinkText("MCP")).await;
    page_with(&c, "No MCP server is configured").await;
    shot(&c, "10-mcp").await;

    // The chat page: a message typed and sent, the answer streamed in by the page's script.
    w.llm
        .push(Reply::text("Hello from hermes, in the browser."));
    click(&c, Locator::LinkText("Chat")).await;
    page_with(&c, "Say something to start").await;
    let field = c.find(Locator::Css("#chat-form textarea")).await.unwrap();
    field.send_keys("hello from the page").await.unwrap();
    click(&c, Locator::Css("#chat-form button")).await;
    page_with(&c, "Hello from hermes, in the browser.").await;
    shot(&c, "11-chat").await;
    // Reloaded, the conversation is still there (read from the store).
    c.refresh().await.unwrap();
    let reloaded = page_with(&c, "Hello from hermes, in the browser.").await;
    assert!(reloaded.contains("hello from the page"), "{reloaded}");

    // On a phone.
    c.set_window_size(390, 844).await.unwrap();
    click(&c, Locator::LinkText("Overview")).await;
    page_with(&c, "<td>telegram</td>").await;
    shot(&c, "8-overview-phone").await;
    c.close().await.unwrap();
}
