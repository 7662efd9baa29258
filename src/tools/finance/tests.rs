//! The finance tools against a fake of Finnhub's documented REST API on 127.0.0.1: the requests
//! (key in the header, never the URL), how answers are shown (source and time on every figure),
//! the cache, and the failures (429, 5xx, malformed JSON, unknown symbols, no provider).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::*;
use crate::policy::{Decision, Level, PolicyMatrix};
use crate::tools::{Category, ToolContext};

const KEY: &str = "finnhub-key-5d2e8b";
/// 2026-12-02 14:30:00 UTC.
const TRADE_TIME: i64 = 1_796_221_800;

type Faults = VecDeque<(u16, Option<&'static str>, &'static str)>;
/// A request's path and query parameters.
type Hit = (String, HashMap<String, String>);

/// A fake Finnhub: counts requests per path, records their queries and token headers, and
/// serves scripted failures first.
#[derive(Clone, Default)]
struct Fake {
    hits: Arc<Mutex<Vec<Hit>>>,
    tokens: Arc<Mutex<Vec<Option<String>>>>,
    faults: Arc<Mutex<Faults>>,
}

impl Fake {
    async fn start() -> (Fake, String) {
        let fake = Fake::default();
        let app = Router::new()
            .route("/api/v1/{*path}", get(answer))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (fake, format!("http://{addr}/api/v1"))
    }

    fn fail_with(&self, status: u16, retry_after: Option<&'static str>, body: &'static str) {
        self.faults
            .lock()
            .unwrap()
            .push_back((status, retry_after, body));
    }

    /// Requests that reached `path` (e.g. "/api/v1/quote").
    fn hits_of(&self, path: &str) -> Vec<HashMap<String, String>> {
        let hits = self.hits.lock().unwrap();
        hits.iter()
            .filter(|(p, _)| p == path)
            .map(|(_, q)| q.clone())
            .collect()
    }

    fn total(&self) -> usize {
        self.hits.lock().unwrap().len()
    }
}

fn news(id: i64, datetime: i64, headline: &str, summary: &str) -> Value {
    json!({"category": "company", "datetime": datetime, "headline": headline, "id": id,
           "image": "", "related": "AAPL", "source": "Reuters", "summary": summary,
           "url": format!("https://news.example/{id}")})
}

async fn answer(
    State(f): State<Fake>,
    uri: Uri,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let path = uri.path().to_owned();
    f.hits.lock().unwrap().push((path.clone(), q.clone()));
    let token = headers
        .get("x-finnhub-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    f.tokens.lock().unwrap().push(token.clone());
    if let Some((status, retry_after, body)) = f.faults.lock().unwrap().pop_front() {
        let mut h = HeaderMap::new();
        if let Some(r) = retry_after {
            h.insert("retry-after", r.parse().unwrap());
        }
        return (StatusCode::from_u16(status).unwrap(), h, body).into_response();
    }
    if token.as_deref() != Some(KEY) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "Invalid API key."})),
        )
            .into_response();
    }
    let symbol = q.get("symbol").map(String::as_str).unwrap_or("");
    let body = match (path.as_str(), symbol) {
        ("/api/v1/quote", "AAPL") => json!({"c": 261.74, "d": -1.5, "dp": -0.5698, "h": 263.31,
            "l": 260.68, "o": 261.07, "pc": 263.24, "t": TRADE_TIME}),
        ("/api/v1/quote", "NOPE") => json!({"c": 0, "d": null, "dp": null, "h": 0, "l": 0,
            "o": 0, "pc": 0, "t": 0}),
        ("/api/v1/quote", "BAD") => json!({"c": "two hundred", "t": TRADE_TIME}),
        ("/api/v1/quote", _) => json!({"c": 10.0, "d": 0.1, "dp": 1.01, "h": 10.2, "l": 9.8,
            "o": 9.9, "pc": 9.9, "t": TRADE_TIME}),
        ("/api/v1/stock/profile2", "AAPL") => json!({"country": "US", "currency": "USD",
            "exchange": "NASDAQ NMS - GLOBAL MARKET", "ipo": "1980-12-12",
            "marketCapitalization": 3_912_345.6, "name": "Apple Inc", "phone": "14089961010",
            "shareOutstanding": 14_840.4, "ticker": "AAPL", "weburl": "https://www.apple.com/",
            "logo": "https://static.example/AAPL.png", "finnhubIndustry": "Technology"}),
        ("/api/v1/stock/profile2", _) => json!({}),
        ("/api/v1/company-news", _) => json!([
            news(
                1,
                TRADE_TIME - 7200,
                "Apple opens a store",
                "A new store in town."
            ),
            news(
                2,
                TRADE_TIME - 60,
                "Apple results beat estimates",
                "Revenue grew."
            ),
            news(
                3,
                TRADE_TIME - 3600,
                "Analysts on Apple's services",
                "Services revenue \
                and margins."
            ),
        ]),
        ("/api/v1/news", _) => json!([
            news(
                10,
                TRADE_TIME - 100,
                "Fed holds interest rates",
                "The central bank..."
            ),
            news(
                11,
                TRADE_TIME - 50,
                "Oil climbs",
                "Crude rose on supply worries."
            ),
        ]),
        _ => return (StatusCode::NOT_FOUND, "no such endpoint").into_response(),
    };
    axum::Json(body).into_response()
}

fn settings(base: &str) -> FinanceSettings {
    FinanceSettings {
        provider: Some(FinanceProvider::Finnhub),
        base_url: base.to_owned(),
        api_key: Secret::new(KEY),
        timeout: Duration::from_secs(5),
        cache: CacheTimes::default(),
    }
}

/// The tools by name.
fn toolset(settings: FinanceSettings) -> HashMap<&'static str, Arc<dyn Tool>> {
    finance_tools(settings)
        .into_iter()
        .map(|t| (t.spec().name, t))
        .collect()
}

async fn call(
    tools: &HashMap<&str, Arc<dyn Tool>>,
    name: &str,
    args: Value,
) -> Result<String, ToolError> {
    tools[name].call(args, &ToolContext::for_tests()).await
}

#[test]
fn every_market_tool_is_finance_and_confirmed_at_auto() {
    let matrix = PolicyMatrix::default();
    let tools = toolset(settings("http://127.0.0.1:9"));
    let mut names: Vec<_> = tools.keys().copied().collect();
    names.sort_unstable();
    assert_eq!(names, ["company_profile", "market_news", "market_quote"]);
    for (name, tool) in &tools {
        assert_eq!(tool.spec().category, Category::Finance, "{name}");
        let decision = matrix.decide(Level::Auto, name, tool.spec().category, false, false);
        assert_eq!(decision, Decision::Confirm, "{name}");
    }
}

#[tokio::test]
async fn a_quote_shows_price_change_currency_exchange_time_and_source() {
    let (fake, base) = Fake::start().await;
    let tools = toolset(settings(&base));
    let out = call(&tools, "market_quote", json!({"symbol": "aapl"}))
        .await
        .unwrap();
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("AAPL (Apple Inc, NASDAQ NMS - GLOBAL MARKET): 261.74 USD")
    );
    assert_eq!(
        lines.next(),
        Some("Change: -1.50 (-0.57%) from the previous close of 263.24")
    );
    assert_eq!(
        lines.next(),
        Some("Day: open 261.07, high 263.31, low 260.68")
    );
    assert_eq!(
        lines.next(),
        Some("As of: 2026-12-02 14:30:00 UTC (exchange time of the last trade)")
    );
    let source = lines.next().unwrap();
    assert!(
        source.starts_with("Source: Finnhub, fetched 20"),
        "{source}"
    );
    assert!(!source.contains("cached"), "{source}");
    assert_eq!(fake.hits_of("/api/v1/quote")[0]["symbol"], "AAPL");
    let tokens = fake.tokens.lock().unwrap().clone();
    assert!(
        tokens.iter().all(|t| t.as_deref() == Some(KEY)),
        "{tokens:?}"
    );
    let queries = fake.hits.lock().unwrap().clone();
    assert!(
        queries
            .iter()
            .all(|(_, q)| !q.values().any(|v| v.contains(KEY))),
        "the key is never in the URL: {queries:?}"
    );
}

#[tokio::test]
async fn a_second_quote_within_the_cache_time_does_not_reach_the_provider() {
    let (fake, base) = Fake::start().await;
    let tools = toolset(settings(&base));
    let first = call(&tools, "market_quote", json!({"symbol": "AAPL"}))
        .await
        .unwrap();
    let second = call(&tools, "market_quote", json!({"symbol": "AAPL"}))
        .await
        .unwrap();
    assert_eq!(fake.hits_of("/api/v1/quote").len(), 1);
    assert_eq!(fake.hits_of("/api/v1/stock/profile2").len(), 1);
    assert!(second.ends_with("(cached answer)"), "{second}");
    // Same figures and the same fetch time: the cache says when the data was fetched.
    assert_eq!(
        first.lines().last().map(|l| format!("{l} (cached answer)")),
        second.lines().last().map(str::to_owned)
    );
    // The profile is cached apart, for a day: company_profile does not ask again either.
    let profile = call(&tools, "company_profile", json!({"symbol": "AAPL"}))
        .await
        .unwrap();
    assert!(profile.ends_with("(cached answer)"), "{profile}");
    assert_eq!(fake.hits_of("/api/v1/stock/profile2").len(), 1);

    // With no cache time every call asks.
    let mut uncached = settings(&base);
    uncached.cache.quote = Duration::ZERO;
    let tools = toolset(uncached);
    call(&tools, "market_quote", json!({"symbol": "AAPL"}))
        .await
        .unwrap();
    call(&tools, "market_quote", json!({"symbol": "AAPL"}))
        .await
        .unwrap();
    assert_eq!(fake.hits_of("/api/v1/quote").len(), 3);
}

#[tokio::test]
async fn an_unknown_symbol_is_an_error_and_a_missing_profile_leaves_the_currency_unknown() {
    let (_fake, base) = Fake::start().await;
    let tools = toolset(settings(&base));
    let e = call(&tools, "market_quote", json!({"symbol": "NOPE"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("no quote for `NOPE`"), "{e}");
    let out = call(&tools, "market_quote", json!({"symbol": "VOD.L"}))
        .await
        .unwrap();
    assert!(
        out.starts_with("VOD.L: 10.00 (currency not reported)\n"),
        "{out}"
    );
    let e = call(&tools, "company_profile", json!({"symbol": "VOD.L"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("no company profile for `VOD.L`"), "{e}");
    let e = call(&tools, "market_quote", json!({"symbol": "AAPL&x=1"}))
        .await
        .unwrap_err();
    assert!(matches!(e, ToolError::InvalidArguments(_)), "{e}");
}

#[tokio::test]
async fn company_profile_lists_the_documented_fields() {
    let (_fake, base) = Fake::start().await;
    let out = call(
        &toolset(settings(&base)),
        "company_profile",
        json!({"symbol": "AAPL"}),
    )
    .await
    .unwrap();
    let expected = "Apple Inc (AAPL)\nExchange: NASDAQ NMS - GLOBAL MARKET\nCountry: US\n\
        Currency: USD\nIndustry: Technology\nMarket capitalization: 3,912,345.60 million USD\n\
        Shares outstanding: 14,840.40 million\nIPO: 1980-12-12\nWebsite: https://www.apple.com/\n\
        Source: Finnhub, fetched ";
    assert!(out.starts_with(expected), "{out}");
}

#[tokio::test]
async fn company_news_asks_for_the_date_range_and_lists_newest_first() {
    let (fake, base) = Fake::start().await;
    let tools = toolset(settings(&base));
    let out = call(
        &tools,
        "market_news",
        json!({"symbol": "AAPL", "days": 3, "limit": 2}),
    )
    .await
    .unwrap();
    let asked = &fake.hits_of("/api/v1/company-news")[0];
    let today = jiff::Timestamp::now()
        .to_zoned_datetime(jiff::tz::TimeZone::UTC)
        .date();
    assert_eq!(asked["to"], today.to_string());
    assert_eq!(
        asked["from"],
        today
            .checked_sub(jiff::Span::new().days(3))
            .unwrap()
            .to_string()
    );
    assert!(out.starts_with("Headlines in AAPL, "), "{out}");
    let first = out.find("Apple results beat estimates").unwrap();
    let second = out.find("Analysts on Apple's services").unwrap();
    assert!(first < second, "{out}");
    assert!(!out.contains("Apple opens a store"), "limit 2: {out}");
    assert!(
        out.contains("\n1. 2026-12-02 14:29:00 UTC · Reuters\n   Apple results beat estimates\n   https://news.example/2\n   Revenue grew.\n"),
        "{out}"
    );
    assert!(
        out.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("Source: Finnhub, fetched ")
    );

    let out = call(
        &tools,
        "market_news",
        json!({"symbol": "AAPL", "query": "SERVICES revenue"}),
    )
    .await
    .unwrap();
    assert!(out.contains("matching \"services revenue\""), "{out}");
    assert!(
        out.contains("Analysts on Apple's services") && !out.contains("store"),
        "{out}"
    );
}

#[tokio::test]
async fn a_query_alone_filters_the_general_news() {
    let (fake, base) = Fake::start().await;
    let tools = toolset(settings(&base));
    let out = call(&tools, "market_news", json!({"query": "interest rates"}))
        .await
        .unwrap();
    assert_eq!(fake.hits_of("/api/v1/news")[0]["category"], "general");
    assert!(
        out.contains("Fed holds interest rates") && !out.contains("Oil"),
        "{out}"
    );
    let out = call(&tools, "market_news", json!({"query": "bananas"}))
        .await
        .unwrap();
    assert!(
        out.starts_with(
            "No headlines in general market news matching \"bananas\".\nSource: Finnhub"
        ),
        "{out}"
    );
    assert_eq!(
        fake.hits_of("/api/v1/news").len(),
        1,
        "the second came from the cache"
    );
}

#[tokio::test]
async fn rate_limits_server_errors_and_malformed_answers_are_clear_and_not_cached() {
    let (fake, base) = Fake::start().await;
    let tools = toolset(settings(&base));
    let quote = json!({"symbol": "AAPL"});

    fake.fail_with(
        429,
        Some("60"),
        r#"{"error":"API limit reached. Please try again later."}"#,
    );
    let e = call(&tools, "market_quote", quote.clone())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Finnhub is limiting the rate") && e.contains("wait 60 s"),
        "{e}"
    );
    assert_eq!(fake.total(), 1, "a minute is not waited out");

    fake.fail_with(429, Some("1"), "");
    let out = call(&tools, "market_news", json!({})).await.unwrap();
    assert!(
        out.contains("Oil climbs"),
        "a one-second wait is honoured: {out}"
    );
    assert_eq!(fake.hits_of("/api/v1/news").len(), 2);

    fake.fail_with(500, None, "");
    fake.fail_with(503, None, r#"{"error":"maintenance"}"#);
    let e = call(&tools, "company_profile", quote.clone())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("HTTP 503: maintenance") && e.contains("second try"),
        "{e}"
    );

    fake.fail_with(200, None, "<html>gateway</html>");
    let e = call(&tools, "market_quote", quote.clone())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("not the JSON its API documents"), "{e}");
    let e = call(&tools, "market_quote", json!({"symbol": "BAD"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("answered /quote with JSON that is not what its API documents"),
        "{e}"
    );
    assert!(!e.contains(KEY));

    // None of the failures was cached: the next call reaches the provider and succeeds.
    let before = fake.hits_of("/api/v1/quote").len();
    let out = call(&tools, "market_quote", quote).await.unwrap();
    assert!(out.starts_with("AAPL (Apple Inc"), "{out}");
    assert_eq!(fake.hits_of("/api/v1/quote").len(), before + 1);
}

#[tokio::test]
async fn a_refused_key_names_the_setting_and_is_never_shown() {
    let (_fake, base) = Fake::start().await;
    let mut wrong = settings(&base);
    wrong.api_key = Secret::new("wrong-key-123456");
    let e = call(&toolset(wrong), "market_quote", json!({"symbol": "AAPL"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("refused the API key (HTTP 401: Invalid API key.)"),
        "{e}"
    );
    assert!(
        e.contains("tools.finance.api_key") && !e.contains("wrong-key-123456"),
        "{e}"
    );
}

#[tokio::test]
async fn without_a_provider_every_tool_says_what_to_configure() {
    let tools = toolset(FinanceSettings::from_config(
        &crate::config::FinanceConfig::default(),
    ));
    for (name, args) in [
        ("market_quote", json!({"symbol": "AAPL"})),
        ("market_news", json!({})),
        ("company_profile", json!({"symbol": "AAPL"})),
    ] {
        let e = call(&tools, name, args).await.unwrap_err().to_string();
        assert!(
            e.contains("market data is not configured") && e.contains("[tools.finance]"),
            "{name}: {e}"
        );
    }
}
