//! The dashboard through the real binary, spoken to as a browser does (forms, cookies,
//! redirects): nothing without signing in, a wrong key refused with no page data, the operator
//! sees the Telegram adapter connected to the fake, reads a conversation held through it,
//! answers a terminal confirmation from the page (not without the form's CSRF token) and the
//! chat gets the answer; the overview's live events; signing out ends the session. Skills are
//! turned off and on from the page (new conversations see it); the chat page talks to the agent
//! through the HTTP API, whole and streamed.

use crate::support;

use reqwest::header::{CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use reqwest::redirect::Policy;
use serde_json::json;
use support::daemon::{ALICE, BOB, World};
use support::llm::Reply;
use support::{WAIT, wait_for};

const ADMIN: &str = "admin-test-token-0123456789";

/// The text between `before` and the next `after` in `page`.
fn between<'a>(page: &'a str, before: &str, after: &str) -> &'a str {
    let start = page
        .find(before)
        .unwrap_or_else(|| panic!("no {before:?} in {page}"))
        + before.len();
    let end = page[start..].find(after).map_or(page.len(), |e| start + e);
    &page[start..end]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_signs_in_reads_a_conversation_and_answers_a_confirmation() {
    let mut w = World::new("").await;
    w.set_env("HERMES_ADMIN_TOKEN", ADMIN);
    w.llm.echo_tool_results();
    let _daemon = w.start().await;
    w.llm.push(Reply::text("Hello Alice, nice to meet you."));
    w.tg.private_text(ALICE, "Alice", "hi, I am <Alice>");
    w.tg.wait_sent(1, WAIT).await;
    let base = w.admin_url().await;
    let http = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    let form = |path: &str, body: String, cookie: Option<&str>| {
        let mut r = http
            .post(format!("{base}{path}"))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body);
        if let Some(c) = cookie {
            r = r.header(COOKIE, c);
        }
        r.send()
    };

    // Not signed in: sent to the sign-in page, no data.
    for path in ["/", "/conversations", "/approvals"] {
        let r = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 303, "{path}");
        assert_eq!(r.headers()[LOCATION], "/login");
    }
    let refused = form("/login", "key=wrong-key-0123456789".into(), None)
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let page = refused.text().await.unwrap();
    assert!(page.contains("not one that opens the dashboard"), "{page}");
    assert!(!page.contains("telegram"), "no page data: {page}");

    // Signed in with the admin token: an HttpOnly, SameSite=Strict session cookie.
    let signed = form("/login", format!("key={ADMIN}"), None).await.unwrap();
    assert_eq!(signed.status(), 303);
    let set = signed.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = set.split(';').next().unwrap().to_owned();
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .header(COOKIE, cookie.as_str())
            .send()
    };
    let overview = get("/").await.unwrap().text().await.unwrap();
    assert!(
        overview.contains("<td>telegram</td><td>connected</td>"),
        "{overview}"
    );

    let list = get("/conversations").await.unwrap().text().await.unwrap();
    let link = between(&list, "<a href=\"/conversations/", "\"").to_owned();
    assert!(list.contains(&format!("telegram:{ALICE}")), "{list}");
    let transcript = get(&format!("/conversations/{link}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        transcript.contains("hi, I am &lt;Alice&gt;")
            && transcript.contains("Hello Alice, nice to meet you."),
        "escaped, both sides: {transcript}"
    );
    let found = get("/conversations?q=nice+to+meet")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(found.contains(&format!("/conversations/{link}")), "{found}");

    // A confirmation, answered from the page.
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo dash-ok-$((40 + 2))"}),
    ));
    w.tg.private_text(ALICE, "Alice", "run the check");
    let asked = w.tg.wait_sent(2, WAIT).await.remove(1);
    assert!(asked.visible_text.contains("Permission needed: terminal"));
    let approvals = get("/approvals").await.unwrap().text().await.unwrap();
    assert!(
        approvals.contains("echo dash-ok-$((40 + 2))"),
        "the exact call: {approvals}"
    );
    let action = between(
        &approvals,
        "<form method=\"post\" action=\"/approvals/",
        "\"",
    )
    .to_owned();
    let csrf = between(&approvals, "name=\"csrf\" value=\"", "\"").to_owned();
    let forged = form(
        &format!("/approvals/{action}"),
        "answer=once".into(),
        Some(&cookie),
    )
    .await
    .unwrap();
    assert_eq!(forged.status(), 403, "no CSRF token, no answer");
    let answered = form(
        &format!("/approvals/{action}"),
        format!("answer=once&csrf={csrf}"),
        Some(&cookie),
    )
    .await
    .unwrap();
    assert_eq!(answered.status(), 303);
    wait_for(
        WAIT,
        "the confirmed command's output in the chat",
        || {
            w.tg.sent()
                .iter()
                .any(|m| m.visible_text.contains("dash-ok-42"))
                .then_some(())
        },
        || format!("{:?}", w.tg.sent()),
    )
    .await;
    let after = get("/approvals").await.unwrap().text().await.unwrap();
    assert!(after.contains("Nothing is waiting"), "{after}");

    // The overview is live: its events carry the same view.
    let mut events = get("/events").await.unwrap();
    let first = tokio::time::timeout(WAIT, events.chunk())
        .await
        .expect("an event in time")
        .unwrap()
        .unwrap_or_default();
    let first = String::from_utf8_lossy(&first);
    assert!(
        first.starts_with("data:") && first.contains("telegram"),
        "{first}"
    );

    // Signing out ends the session.
    let out = form("/logout", format!("csrf={csrf}"), Some(&cookie))
        .await
        .unwrap();
    assert_eq!(out.status(), 303);
    assert_eq!(
        get("/").await.unwrap().status(),
        303,
        "the old cookie is dead"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_jobs_are_paused_resumed_and_run_from_the_page() {
    let mut w = World::new("").await;
    w.set_env("HERMES_ADMIN_TOKEN", ADMIN);
    let (code, _, err) = w.run(&[
        "cron",
        "add",
        "--schedule",
        "every 1d",
        "--prompt",
        "write the digest",
        "--name",
        "digest",
    ]);
    assert!(code.success(), "{err}");
    w.llm.set_default(|_| Reply::text("Digest: all quiet."));
    let _daemon = w.start().await;
    let base = w.admin_url().await;
    let http = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    let signed = http
        .post(format!("{base}/login"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(format!("key={ADMIN}"))
        .send()
        .await
        .unwrap();
    let cookie = signed.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let page = || async {
        http.get(format!("{base}/jobs"))
            .header(COOKIE, cookie.as_str())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let jobs = page().await;
    assert!(
        jobs.contains("digest") && jobs.contains("every 1d") && jobs.contains("Pause"),
        "{jobs}"
    );
    let action = between(&jobs, "<form method=\"post\" action=\"/jobs/", "\"").to_owned();
    let csrf = between(&jobs, "name=\"csrf\" value=\"", "\"").to_owned();
    let post = |what: &str| {
        http.post(format!("{base}/jobs/{action}"))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(COOKIE, cookie.as_str())
            .body(format!("do={what}&csrf={csrf}"))
            .send()
    };
    assert_eq!(post("pause").await.unwrap().status(), 303);
    let paused = page().await;
    assert!(
        paused.contains("paused") && paused.contains("Resume"),
        "{paused}"
    );
    assert_eq!(post("resume").await.unwrap().status(), 303);
    assert!(page().await.contains("Pause"));
    // Run now: the scheduler starts it within seconds and the run is listed.
    assert_eq!(post("run").await.unwrap().status(), 303);
    let mut last = String::new();
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        last = page().await;
        if last.contains("Digest: all quiet.") {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("the run never showed: {last}\n{}", w.logs());
}

const OPS: &str = "ops-api-key-0123456789abcdef";

/// Signed in with `key`: the client and the session cookie.
async fn signed_in(base: &str, key: &str) -> (reqwest::Client, String) {
    let http = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    let signed = http
        .post(format!("{base}/login"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(format!("key={key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), 303, "signed in with {key}");
    let cookie = signed.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    (http, cookie)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_turned_off_and_on_and_the_chat_talks_through_the_api() {
    let port = support::http::free_port();
    let mut w = World::new("[api.keys.ops]\ntoken_env = \"OPS_KEY\"\noperator = true\n").await;
    w.set_env("OPS_KEY", OPS);
    w.set_env("HERMES_API_LISTEN", &format!("127.0.0.1:{port}"));
    let dir = w.home.path().join("skills/tea-timer");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: tea-timer\ndescription: Time a pot of tea <properly>.\n---\n\n1. Steep green tea for 2 minutes.\n",
    )
    .unwrap();
    let _daemon = w.start_logging("HTTP API listening").await;
    let base = w.admin_url().await;
    // An operator API key opens the dashboard too.
    let (http, cookie) = signed_in(&base, OPS).await;
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .header(COOKIE, cookie.as_str())
            .send()
    };
    let text = |path: &'static str| {
        let get = &get;
        async move { get(path).await.unwrap().text().await.unwrap() }
    };

    let skills = text("/skills").await;
    assert!(
        skills.contains("href=\"/skills/tea-timer\"")
            && skills.contains("Time a pot of tea &lt;properly&gt;.")
            && skills.contains("hermes-operations"),
        "ours and the bundled ones, escaped: {skills}"
    );
    let one = text("/skills/tea-timer").await;
    assert!(one.contains("Steep green tea for 2 minutes."), "{one}");
    let csrf = between(&skills, "name=\"csrf\" value=\"", "\"").to_owned();
    let switch = |what: &str, csrf: &str| {
        http.post(format!("{base}/skills/tea-timer"))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(COOKIE, cookie.as_str())
            .body(format!("do={what}&csrf={csrf}"))
            .send()
    };
    assert_eq!(switch("disable", "forged").await.unwrap().status(), 403);
    assert_eq!(switch("disable", &csrf).await.unwrap().status(), 303);
    let off = text("/skills/tea-timer").await;
    assert!(
        off.contains("<dd>off</dd>") && off.contains("Turn on"),
        "{off}"
    );
    let (code, listed, _) = w.run(&["skills", "list"]);
    assert!(code.success());
    assert!(
        listed.contains("Turned off (hermes skills enable <name>): tea-timer"),
        "{listed}"
    );

    // A conversation started now does not see it; one started after turning it on does.
    w.tg.private_text(ALICE, "Alice", "hi");
    w.tg.wait_sent(1, WAIT).await;
    let prompt = w.llm.requests()[0].system_text().unwrap();
    assert!(
        prompt.contains("- hermes-operations:") && !prompt.contains("tea-timer"),
        "{prompt}"
    );
    assert_eq!(switch("enable", &csrf).await.unwrap().status(), 303);
    w.tg.private_text(BOB, "Bob", "hi");
    w.tg.wait_sent(2, WAIT).await;
    let prompt = w.llm.requests()[1].system_text().unwrap();
    assert!(
        prompt.contains("- tea-timer: Time a pot of tea"),
        "{prompt}"
    );

    // The chat page: empty at first, then a message answered through the API.
    let empty = text("/chat").await;
    assert!(
        empty.contains("Say something to start") && empty.contains("api:ops"),
        "{empty}"
    );
    w.llm.push(Reply::text("Hello from the dashboard chat."));
    let sent = http
        .post(format!("{base}/chat/send"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(COOKIE, cookie.as_str())
        .body(format!("text=hello+there&csrf={csrf}"))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 303, "{}", sent.text().await.unwrap());
    let chat = text("/chat").await;
    assert!(
        chat.contains("hello there") && chat.contains("Hello from the dashboard chat."),
        "both sides in the page: {chat}"
    );
    let api_request = w.llm.requests().last().unwrap().last_user_text().unwrap();
    assert!(api_request.contains("hello there"), "{api_request}");
    // Streamed: the API's events passed through, the same conversation continued.
    w.llm.set_default(|req| {
        let seen = req.messages().iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Hello from the dashboard chat."))
        });
        Reply::text(format!("streamed, remembering: {seen}"))
    });
    let streamed = http
        .post(format!("{base}/chat/send"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(COOKIE, cookie.as_str())
        .body(format!("text=and+now&stream=1&csrf={csrf}"))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.headers()[CONTENT_TYPE], "text/event-stream");
    let events = streamed.text().await.unwrap();
    let said: String = events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(said, "streamed, remembering: true", "{events}");
    assert!(events.trim_end().ends_with("data: [DONE]"), "{events}");
    // Without the form's token, nothing is said.
    let requests = w.llm.requests().len();
    let forged = http
        .post(format!("{base}/chat/send"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(COOKIE, cookie.as_str())
        .body("text=forged")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    assert_eq!(w.llm.requests().len(), requests);
}
