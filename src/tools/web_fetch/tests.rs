//! `web_fetch` against a real HTTP server on 127.0.0.1 (allowed with `allow_private`, or reached
//! through a name the test resolver maps to it).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::http::{StatusCode as AxumStatus, header};
use axum::response::{Html, Redirect};
use axum::routing::get;
use serde_json::json;

use super::*;

const PAGE: &str = r#"<html><head><title>T</title><script>var x = "SCRIPT-BODY";</script>
    <style>p { color: red }</style></head><body><nav><a href="/">NAV-HOME</a></nav>
    <h1>Hello</h1><p>World, with a <a href="/next">link</a>.</p><ul><li>item one</li></ul>
    </body></html>"#;

/// A test server; `secret_hits` counts requests that reached `/secret`.
struct Server {
    addr: SocketAddr,
    secret_hits: Arc<AtomicUsize>,
}

impl Server {
    async fn start() -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let secret_hits = Arc::new(AtomicUsize::new(0));
        let hits = secret_hits.clone();
        let private = format!("http://127.0.0.1:{}/secret", addr.port());
        let app = Router::new()
            .route("/page", get(|| async { Html(PAGE) }))
            .route("/a", get(|| async { Redirect::temporary("/b") }))
            .route("/b", get(|| async { Redirect::permanent("/c") }))
            .route("/c", get(|| async { Redirect::to("/page") }))
            .route("/loop", get(|| async { Redirect::temporary("/loop") }))
            .route(
                "/to-private",
                get(move || async move { Redirect::temporary(&private) }),
            )
            .route(
                "/secret",
                get(move || async move {
                    hits.fetch_add(1, Ordering::SeqCst);
                    "SECRET"
                }),
            )
            .route("/json", get(|| async { axum::Json(json!({"k": "v"})) }))
            .route(
                "/png",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "image/png")],
                        b"\x89PNG\0\0".to_vec(),
                    )
                }),
            )
            .route(
                "/missing",
                get(|| async { (AxumStatus::NOT_FOUND, "no such page here") }),
            )
            .route("/big", get(|| async { "x".repeat(10_000) }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    "late"
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Server { addr, secret_hits }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

fn allowing_private() -> WebFetch {
    WebFetch::new(WebFetchSettings {
        allow_private: true,
        ..WebFetchSettings::default()
    })
}

async fn fetch(tool: &WebFetch, args: Value) -> Result<String, ToolError> {
    tool.call(args, &ToolContext::for_tests()).await
}

fn failure(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Failed(message)) => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn html_page_comes_back_as_text_without_scripts() {
    let server = Server::start().await;
    let out = fetch(&allowing_private(), json!({"url": server.url("/page")}))
        .await
        .unwrap();
    let head = format!(
        "URL: {}\nStatus: 200 OK\nContent-Type: text/html; charset=utf-8\n\n",
        server.url("/page")
    );
    assert!(out.starts_with(&head), "{out}");
    let next = format!("[1]: {}", server.url("/next"));
    for kept in ["# Hello", "World", "link", "item one", &next] {
        assert!(out.contains(kept), "`{kept}` missing:\n{out}");
    }
    for dropped in ["SCRIPT-BODY", "color: red", "NAV-HOME"] {
        assert!(!out.contains(dropped), "`{dropped}` kept:\n{out}");
    }
}

#[tokio::test]
async fn redirect_chain_is_followed_to_the_final_url() {
    let server = Server::start().await;
    let out = fetch(&allowing_private(), json!({"url": server.url("/a")}))
        .await
        .unwrap();
    assert!(
        out.starts_with(&format!("URL: {}\nStatus: 200 OK", server.url("/page"))),
        "{out}"
    );
    assert!(out.contains("Hello"));
}

#[tokio::test]
async fn endless_redirects_stop_after_the_limit() {
    let server = Server::start().await;
    let message = failure(fetch(&allowing_private(), json!({"url": server.url("/loop")})).await);
    assert!(message.starts_with("too many redirects"), "{message}");
}

#[tokio::test]
async fn redirect_from_a_public_name_to_a_private_address_is_refused() {
    let server = Server::start().await;
    let port = server.addr.port();
    // `public.example` exists only in this resolver; the guard lets it through by name (as if it
    // were public) and must then vet the redirect target on its own.
    let resolver = move |host: &str, _: u16| match host {
        "public.example" => vec![SocketAddr::from(([127, 0, 0, 1], port))],
        _ => Vec::new(),
    };
    let guard = Guard::new(false, Arc::new(resolver)).exempt("public.example");
    let tool = WebFetch::with_guard(WebFetchSettings::default(), guard);

    // The connection goes to the vetted address: the name has no real DNS entry.
    let out = fetch(
        &tool,
        json!({"url": format!("http://public.example:{port}/page")}),
    )
    .await
    .unwrap();
    assert!(out.contains("Hello"), "{out}");

    let message = failure(
        fetch(
            &tool,
            json!({"url": format!("http://public.example:{port}/to-private")}),
        )
        .await,
    );
    assert!(
        message.contains("127.0.0.1") && message.contains("loopback"),
        "{message}"
    );
    assert!(
        message.contains("configuration can allow private addresses"),
        "{message}"
    );
    assert_eq!(
        server.secret_hits.load(Ordering::SeqCst),
        0,
        "the private address was reached"
    );
}

#[tokio::test]
async fn a_public_looking_name_resolving_to_a_private_address_is_refused() {
    let server = Server::start().await;
    let port = server.addr.port();
    let resolver = move |_: &str, _: u16| vec![SocketAddr::from(([127, 0, 0, 1], port))];
    let tool = WebFetch::with_guard(
        WebFetchSettings::default(),
        Guard::new(false, Arc::new(resolver)),
    );
    let message = failure(
        fetch(
            &tool,
            json!({"url": format!("http://public.example:{port}/secret")}),
        )
        .await,
    );
    assert!(message.contains("loopback"), "{message}");
    assert_eq!(server.secret_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn default_settings_refuse_the_loopback_server() {
    let server = Server::start().await;
    let tool = WebFetch::new(WebFetchSettings::default());
    for url in [
        server.url("/secret"),
        format!("http://localhost:{}/secret", server.addr.port()),
    ] {
        let message = failure(fetch(&tool, json!({ "url": url })).await);
        assert!(
            message.contains("configuration can allow private addresses"),
            "{message}"
        );
    }
    assert_eq!(server.secret_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn error_status_is_reported_with_an_excerpt() {
    let server = Server::start().await;
    let message = failure(fetch(&allowing_private(), json!({"url": server.url("/missing")})).await);
    assert_eq!(
        message,
        format!(
            "{} answered HTTP 404 Not Found: no such page here",
            server.url("/missing")
        )
    );
}

#[tokio::test]
async fn binary_content_is_refused_and_json_passes_as_is() {
    let server = Server::start().await;
    let tool = allowing_private();
    let message = failure(fetch(&tool, json!({"url": server.url("/png")})).await);
    assert!(
        message.contains("`image/png`, which cannot be read as text"),
        "{message}"
    );
    let out = fetch(&tool, json!({"url": server.url("/json")}))
        .await
        .unwrap();
    assert!(
        out.contains("Content-Type: application/json\n\n{\"k\":\"v\"}"),
        "{out}"
    );
}

#[tokio::test]
async fn byte_and_character_caps_are_reported() {
    let server = Server::start().await;
    let tool = WebFetch::new(WebFetchSettings {
        allow_private: true,
        max_bytes: 1_000,
        ..WebFetchSettings::default()
    });
    let out = fetch(&tool, json!({"url": server.url("/big")}))
        .await
        .unwrap();
    assert!(
        out.contains("only the first 1000 bytes were downloaded"),
        "{out}"
    );
    assert!(out.ends_with(&"x".repeat(1_000)));

    let out = fetch(&tool, json!({"url": server.url("/big"), "max_chars": 100}))
        .await
        .unwrap();
    assert!(
        out.contains(&format!(
            "{}\n[… 900 more characters cut at max_chars = 100",
            "x".repeat(100)
        )),
        "{out}"
    );
}

#[tokio::test]
async fn slow_servers_time_out() {
    let server = Server::start().await;
    let tool = WebFetch::new(WebFetchSettings {
        allow_private: true,
        timeout: Duration::from_millis(300),
        ..WebFetchSettings::default()
    });
    let message = failure(fetch(&tool, json!({"url": server.url("/slow")})).await);
    assert!(message.starts_with("timed out after 300ms"), "{message}");
}

#[tokio::test]
async fn bad_arguments_are_explained() {
    let tool = allowing_private();
    for args in [
        json!({"url": "example.org/page"}),
        json!({"url": "ftp://example.org/file"}),
        json!({"url": "file:///etc/passwd"}),
        json!({"url": "https://example.org", "max_chars": 0}),
        json!({"url": "https://example.org", "max_chars": 100_001}),
        json!({"address": "https://example.org"}),
    ] {
        let err = fetch(&tool, args.clone()).await.unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments(_)),
            "{args}: {err}"
        );
    }
}

#[test]
fn spec_and_schema() {
    let spec = WebFetch::new(WebFetchSettings::default()).spec;
    assert_eq!(
        (spec.name, spec.category, spec.parallel_safe),
        ("web_fetch", Category::Read, true)
    );
    assert_eq!(spec.parameters["required"], json!(["url"]));
}
