//! `web_search` against fakes of the three documented APIs on 127.0.0.1: what each request
//! carries, how each answer is read and shown, and the failures (429, 5xx, bad JSON, no
//! provider).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::*;

const KEY: &str = "search-key-7f3a9c";

/// One request the fake received.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    query: std::collections::HashMap<String, String>,
    headers: HeaderMap,
    body: String,
}

/// Scripted failures served before the normal answers: status, `Retry-After`, body.
type Faults = VecDeque<(u16, Option<&'static str>, &'static str)>;

#[derive(Clone, Default)]
struct Fake {
    seen: Arc<Mutex<Vec<Seen>>>,
    faults: Arc<Mutex<Faults>>,
}

impl Fake {
    async fn start() -> (Fake, String) {
        let fake = Fake::default();
        let app = Router::new()
            .route("/search", post(tavily).get(searxng))
            .route("/res/v1/web/search", get(brave))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (fake, format!("http://{addr}"))
    }

    fn fail_with(&self, status: u16, retry_after: Option<&'static str>, body: &'static str) {
        self.faults
            .lock()
            .unwrap()
            .push_back((status, retry_after, body));
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Record the request; the scripted failure to answer with, if one is queued.
    fn record(
        &self,
        method: Method,
        uri: &Uri,
        query: std::collections::HashMap<String, String>,
        headers: HeaderMap,
        body: &Bytes,
    ) -> Option<Response> {
        self.seen.lock().unwrap().push(Seen {
            method,
            path: uri.path().to_owned(),
            query,
            headers,
            body: String::from_utf8_lossy(body).into_owned(),
        });
        let (status, retry_after, body) = self.faults.lock().unwrap().pop_front()?;
        let mut headers = HeaderMap::new();
        if let Some(r) = retry_after {
            headers.insert("retry-after", r.parse().unwrap());
        }
        Some((StatusCode::from_u16(status).unwrap(), headers, body).into_response())
    }
}

type Params = Query<std::collections::HashMap<String, String>>;

/// Tavily: the documented `results[].title/url/content`, plus fields we do not read.
async fn tavily(
    State(f): State<Fake>,
    uri: Uri,
    Query(q): Params,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = f.record(Method::POST, &uri, q, headers, &body) {
        return r;
    }
    let asked: Value = serde_json::from_slice(&body).unwrap_or_default();
    let n = asked["max_results"].as_u64().unwrap_or(5) as usize;
    let results: Vec<Value> = (1..=n.min(3))
        .map(|i| {
            json!({"title": format!("Tavily result {i}"), "url": format!("https://t.example/{i}"),
                   "content": format!("Snippet {i} about {}", asked["query"].as_str().unwrap_or("")),
                   "score": 0.9, "raw_content": null})
        })
        .collect();
    axum::Json(
        json!({"query": asked["query"], "answer": null, "images": [], "results": results,
                      "response_time": 0.5}),
    )
    .into_response()
}

/// Brave: `web.results[].title/url/description`, terms in `<strong>`.
async fn brave(State(f): State<Fake>, uri: Uri, Query(q): Params, headers: HeaderMap) -> Response {
    let count: usize = q.get("count").and_then(|c| c.parse().ok()).unwrap_or(20);
    let query = q.get("q").cloned().unwrap_or_default();
    if let Some(r) = f.record(Method::GET, &uri, q, headers, &Bytes::new()) {
        return r;
    }
    let results: Vec<Value> = (1..=count.min(4))
        .map(|i| {
            json!({"title": format!("Brave &amp; result {i}"), "url": format!("https://b.example/{i}"),
                   "description": format!("All about <strong>{query}</strong>, part {i}"),
                   "type": "search_result", "language": "en"})
        })
        .collect();
    axum::Json(json!({"type": "search", "query": {"original": query},
                      "web": {"type": "search", "results": results}}))
    .into_response()
}

/// SearXNG: `results[].title/url/content`, as many as it likes (no count parameter).
async fn searxng(
    State(f): State<Fake>,
    uri: Uri,
    Query(q): Params,
    headers: HeaderMap,
) -> Response {
    let query = q.get("q").cloned().unwrap_or_default();
    if let Some(r) = f.record(Method::GET, &uri, q, headers, &Bytes::new()) {
        return r;
    }
    let results: Vec<Value> = (1..=12)
        .map(|i| {
            json!({"title": format!("SearXNG result {i}"), "url": format!("https://s.example/{i}"),
                   "content": format!("{query} snippet {i}"), "engine": "duckduckgo",
                   "engines": ["duckduckgo"], "score": 1.0})
        })
        .collect();
    axum::Json(
        json!({"query": query, "number_of_results": 0, "results": results,
                      "answers": [], "suggestions": [], "unresponsive_engines": []}),
    )
    .into_response()
}

fn tool(provider: WebSearchProvider, base: &str) -> WebSearch {
    WebSearch::new(WebSearchSettings {
        provider: Some(provider),
        base_url: base.to_owned(),
        api_key: Secret::new(KEY),
        max_results: 5,
        timeout: Duration::from_secs(5),
    })
}

async fn search(tool: &WebSearch, args: Value) -> Result<String, ToolError> {
    tool.call(args, &ToolContext::for_tests()).await
}

#[tokio::test]
async fn tavily_gets_a_json_post_with_the_key_as_bearer() {
    let (fake, base) = Fake::start().await;
    let out = search(
        &tool(WebSearchProvider::Tavily, &base),
        json!({"query": "  rust   async ", "max_results": 2}),
    )
    .await
    .unwrap();
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("POST", "/search")
    );
    assert_eq!(seen[0].headers["authorization"], format!("Bearer {KEY}"));
    let body: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(body, json!({"query": "rust async", "max_results": 2}));
    assert!(
        out.starts_with("2 results for \"rust async\" (source: Tavily, searched "),
        "{out}"
    );
    assert!(
        out.contains(
            "\n1. Tavily result 1\n   https://t.example/1\n   Snippet 1 about rust async\n"
        ),
        "{out}"
    );
    assert!(out.contains("\n2. Tavily result 2\n"), "{out}");
    assert!(!out.contains(KEY));
}

#[tokio::test]
async fn brave_gets_the_query_and_count_and_its_token_header() {
    let (fake, base) = Fake::start().await;
    let out = search(
        &tool(WebSearchProvider::Brave, &base),
        json!({"query": "tokio select"}),
    )
    .await
    .unwrap();
    let seen = &fake.seen()[0];
    assert_eq!(seen.path, "/res/v1/web/search");
    assert_eq!(seen.query["q"], "tokio select");
    assert_eq!(seen.query["count"], "5", "the configured default");
    assert_eq!(seen.headers["x-subscription-token"], KEY);
    assert!(seen.headers.get("authorization").is_none());
    // The fake gives at most 4; markup and entities are gone.
    assert!(
        out.starts_with("4 results for \"tokio select\" (source: Brave Search"),
        "{out}"
    );
    assert!(
        out.contains(
            "\n1. Brave & result 1\n   https://b.example/1\n   All about tokio select, part 1\n"
        ),
        "{out}"
    );
    assert!(!out.contains("<strong>"), "{out}");
}

#[tokio::test]
async fn searxng_is_asked_for_json_without_a_key_and_cut_to_the_count() {
    let (fake, base) = Fake::start().await;
    let mut settings = tool(WebSearchProvider::Searxng, &base).settings;
    settings.api_key = Secret::default();
    let out = search(
        &WebSearch::new(settings),
        json!({"query": "self hosted", "max_results": 3}),
    )
    .await
    .unwrap();
    let seen = &fake.seen()[0];
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("GET", "/search")
    );
    assert_eq!(seen.query["format"], "json");
    assert_eq!(seen.query["q"], "self hosted");
    assert!(seen.headers.get("authorization").is_none());
    assert!(
        out.starts_with("3 results for \"self hosted\" (source: SearXNG"),
        "{out}"
    );
    assert!(out.contains("\n3. SearXNG result 3\n"), "{out}");
    assert!(!out.contains("SearXNG result 4"), "{out}");
}

#[tokio::test]
async fn rate_limits_server_errors_and_bad_json_are_clear_errors() {
    let (fake, base) = Fake::start().await;
    let brave = tool(WebSearchProvider::Brave, &base);
    let args = json!({"query": "q"});
    fake.fail_with(429, Some("3600"), r#"{"error":{"code":"RATE_LIMITED"}}"#);
    let e = search(&brave, args.clone()).await.unwrap_err().to_string();
    assert!(
        e.contains("Brave Search is limiting the rate") && e.contains("3600 s"),
        "{e}"
    );
    assert_eq!(fake.seen().len(), 1, "an hour is not waited out");

    fake.fail_with(500, None, "oops");
    fake.fail_with(502, None, "oops again");
    let e = search(&brave, args.clone()).await.unwrap_err().to_string();
    assert!(e.contains("HTTP 502") && e.contains("second try"), "{e}");
    assert_eq!(fake.seen().len(), 3, "one retry");

    fake.fail_with(500, None, "blip");
    assert!(
        search(&brave, args.clone()).await.is_ok(),
        "a single 5xx is retried"
    );
    assert_eq!(fake.seen().len(), 5);

    fake.fail_with(200, None, "<html>not json</html>");
    let e = search(&brave, args).await.unwrap_err().to_string();
    assert!(e.contains("not the JSON its API documents"), "{e}");
    assert!(!e.contains(KEY));
}

#[tokio::test]
async fn without_a_provider_the_tool_says_what_to_configure() {
    let tool = WebSearch::new(WebSearchSettings::from_config(&WebSearchConfig::default()));
    let e = search(&tool, json!({"query": "anything"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not configured") && e.contains("[tools.web_search] provider"),
        "{e}"
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_before_any_request() {
    let (fake, base) = Fake::start().await;
    let t = tool(WebSearchProvider::Tavily, &base);
    for args in [
        json!({"query": "   "}),
        json!({"query": "x", "max_results": 21}),
        json!({"query": "x", "max_results": 0}),
        json!({"query": "x".repeat(401)}),
    ] {
        let e = search(&t, args.clone()).await.unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments(_)), "{args}: {e}");
    }
    assert!(fake.seen().is_empty());
}

#[test]
fn no_results_and_long_snippets_are_shown_plainly() {
    assert_eq!(
        render("zzz", "Tavily", "2026-12-02 15:40:00 UTC", &[]),
        "No results for \"zzz\" (source: Tavily, searched 2026-12-02 15:40:00 UTC). Try other \
         or fewer words."
    );
    let hit = Hit {
        title: String::new(),
        url: "https://x.example/".into(),
        snippet: "é".repeat(600),
    };
    let out = render("q", "SearXNG", "now", &[hit]);
    assert!(
        out.starts_with("1 result for \"q\" (source: SearXNG, searched now):\n"),
        "{out}"
    );
    assert!(
        out.contains("1. (no title)\n   https://x.example/\n"),
        "{out}"
    );
    assert!(out.contains(&format!("   {}…\n", "é".repeat(500))), "{out}");
}
