//! `web_search`, the finance tools and `notes_search` through the real binary, the fake
//! Telegram and the scripted model: a market quote is confirmed by the person at level `auto`
//! and reaches the provider only once they allow it; a search runs without asking; tools whose
//! provider is not configured are not offered; `config check` and `doctor` say what is set up,
//! never the keys.

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::Query;
use axum::http::HeaderMap;
use axum::routing::get;
use serde_json::json;
use support::daemon::{ALICE, World};
use support::llm::Reply;
use support::{Buttons, WAIT};

const FINNHUB_KEY: &str = "finnhub-test-key-91c4";

/// A Finnhub of quotes and profiles (its documented shapes) that counts the requests bearing
/// the right `X-Finnhub-Token`; others get its 401.
async fn finnhub() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = Router::new().route(
        "/api/v1/{*endpoint}",
        get(
            move |axum::extract::Path(endpoint): axum::extract::Path<String>,
                  Query(q): Query<HashMap<String, String>>,
                  headers: HeaderMap| {
                let counter = counter.clone();
                async move {
                    if headers.get("x-finnhub-token").and_then(|v| v.to_str().ok())
                        != Some(FINNHUB_KEY)
                    {
                        return (
                            axum::http::StatusCode::UNAUTHORIZED,
                            axum::Json(json!({"error": "Invalid API key."})),
                        );
                    }
                    counter.fetch_add(1, Ordering::SeqCst);
                    let body = match (endpoint.as_str(), q.get("symbol").map(String::as_str)) {
                        ("quote", Some("AAPL")) => json!({"c": 261.74, "d": 1.5, "dp": 0.5764,
                            "h": 263.31, "l": 260.68, "o": 261.07, "pc": 260.24,
                            "t": 1_796_221_800}),
                        ("stock/profile2", Some("AAPL")) => json!({"name": "Apple Inc",
                            "ticker": "AAPL", "exchange": "NASDAQ NMS - GLOBAL MARKET",
                            "currency": "USD", "country": "US"}),
                        _ => json!({}),
                    };
                    (axum::http::StatusCode::OK, axum::Json(body))
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/api/v1"), hits)
}

/// A SearXNG that answers every search with two results; like a real instance, it refuses
/// (403) a format its settings do not enable.
async fn searxng() -> String {
    let app = Router::new().route(
        "/search",
        get(|Query(q): Query<HashMap<String, String>>| async move {
            if q.get("format").map(String::as_str) != Some("json") {
                return (axum::http::StatusCode::FORBIDDEN, axum::Json(json!({})));
            }
            let query = q.get("q").cloned().unwrap_or_default();
            let results = json!({"query": query, "results": [
                {"title": "Lemon tart recipe", "url": "https://recipes.example/tart",
                 "content": format!("How to make a {query}."), "engine": "bing"},
                {"title": "Tart history", "url": "https://history.example/tart",
                 "content": "Since 1600.", "engine": "bing"}
            ]});
            (axum::http::StatusCode::OK, axum::Json(results))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// Market data from the fake at `url`; times shown in UTC whatever this machine's zone.
fn finance_config(url: &str) -> String {
    format!(
        "[agent]\ntimezone = \"UTC\"\n\n[tools.finance]\nprovider = \"finnhub\"\n\
         api_key = \"{FINNHUB_KEY}\"\nurl = \"{url}\"\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_market_quote_asks_first_and_reaches_the_provider_only_once_allowed() {
    let (url, hits) = finnhub().await;
    let mut w = World::new(&finance_config(&url)).await;
    w.llm.echo_tool_results();
    w.llm
        .push(Reply::tool_call("market_quote", json!({"symbol": "AAPL"})));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "what is Apple trading at?");
    let request = w.tg.wait_sent(1, WAIT).await.remove(0);
    assert!(
        request
            .visible_text
            .contains("Permission needed: market_quote"),
        "{}",
        request.visible_text
    );
    assert!(request.visible_text.contains("AAPL"), "the call is shown");
    // The turn is waiting for Alice: nothing has gone to the provider.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hits.load(Ordering::SeqCst), 0, "no request before approval");
    assert!(
        w.llm.requests()[0]
            .tool_names()
            .contains(&"market_quote".to_owned())
    );

    w.tg.callback_query(
        ALICE,
        ALICE,
        request.message_id,
        &request.button("Allow once"),
    );
    let answer = w.tg.wait_sent(2, WAIT).await.remove(1).visible_text;
    assert!(
        answer.contains("AAPL (Apple Inc, NASDAQ NMS - GLOBAL MARKET): 261.74 USD"),
        "{answer}"
    );
    assert!(answer.contains("Change: +1.50 (+0.58%)"), "{answer}");
    assert!(
        answer.contains("As of: 2026-12-02 14:30:00 UTC (exchange time of the last trade)")
            && answer.contains("Source: Finnhub, fetched"),
        "{answer}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2, "the quote and the profile");
    assert!(!answer.contains(FINNHUB_KEY));
    assert!(!w.logs().contains(FINNHUB_KEY), "the key is never logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_search_and_a_notes_search_run_without_asking() {
    let site = searxng().await;
    let mut w = World::new(&format!(
        "[tools.web_search]\nprovider = \"searxng\"\nurl = \"{site}\"\nmax_results = 1\n"
    ))
    .await;
    let notes = w.workspace_of("telegram", &ALICE.to_string()).join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("baking.md"), "# Baking\nLemon tart for Sunday\n").unwrap();
    w.llm.push(Reply::tool_calls(vec![
        ("web_search", json!({"query": "lemon tart"})),
        ("notes_search", json!({"query": "tart sunday"})),
    ]));
    w.llm.push(Reply::text("found both"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "find me a tart recipe");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(
        sent[0].visible_text, "found both",
        "no confirmation was asked"
    );
    let offered = w.llm.requests()[0].tool_names();
    assert!(offered.contains(&"web_search".to_owned()), "{offered:?}");
    assert!(
        !offered.contains(&"market_quote".to_owned()),
        "no market data provider, no market tools: {offered:?}"
    );
    let results = w.llm.requests()[1].tool_result_texts();
    assert!(
        results[0].starts_with("1 result for \"lemon tart\" (source: SearXNG, searched "),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains(
            "1. Lemon tart recipe\n   https://recipes.example/tart\n   How to make a lemon tart."
        ) && !results[0].contains("Tart history"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("notes/baking.md\n  2: Lemon tart for Sunday"),
        "{}",
        results[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_without_a_provider_are_not_offered() {
    let mut w = World::new("").await;
    w.llm.push(Reply::text("hello"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "hi");
    w.tg.wait_sent(1, WAIT).await;
    let offered = w.llm.requests()[0].tool_names();
    for present in ["web_fetch", "notes_search"] {
        assert!(
            offered.contains(&present.to_owned()),
            "{present}: {offered:?}"
        );
    }
    for absent in [
        "web_search",
        "market_quote",
        "market_news",
        "company_profile",
    ] {
        assert!(
            !offered.contains(&absent.to_owned()),
            "{absent}: {offered:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_check_and_doctor_say_what_is_configured_never_the_key() {
    let w = World::new(&finance_config("http://127.0.0.1:9/api/v1")).await;
    let (status, stdout, stderr) = w.run(&["config", "check"]);
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains("market data: Finnhub at 127.0.0.1:9"),
        "{stdout}"
    );
    assert!(
        stdout.contains("web search: not configured") && stdout.contains("not offered"),
        "{stdout}"
    );
    let (_, doctor, _) = w.run(&["doctor"]);
    assert!(
        doctor.contains("✓ market data: Finnhub at 127.0.0.1:9"),
        "{doctor}"
    );
    assert!(!stdout.contains(FINNHUB_KEY) && !doctor.contains(FINNHUB_KEY));

    let w = World::new("[tools.finance]\nprovider = \"finnhub\"\n").await;
    let (status, _, stderr) = w.run(&["config", "check"]);
    assert!(!status.success());
    assert!(
        stderr.contains("tools.finance.api_key") && stderr.contains("FINNHUB_API_KEY"),
        "{stderr}"
    );
    let mut w = w;
    w.set_env("FINNHUB_API_KEY", "from-the-environment-1");
    let (status, stdout, stderr) = w.run(&["config", "check"]);
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains("market data: Finnhub at finnhub.io"),
        "{stdout}"
    );
}
