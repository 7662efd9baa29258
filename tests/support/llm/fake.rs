//! Fake LLM provider (axum) for integration tests: OpenAI-compatible `POST /v1/chat/completions`
//! and Anthropic `POST /v1/messages`, plain JSON or SSE streaming, scripted replies (text, tool
//! calls, errors, delays, gates), recording of every request. Response bodies are built in
//! `wire`.
//!
//! Both endpoints reject what the real APIs reject and agents get wrong: a missing `model` /
//! `messages` (and `max_tokens` for Anthropic), and tool-call transcripts where a tool call has
//! no result right after it (or a result has no call). Rejected requests are recorded but do
//! not consume the script.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State as AxState};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::RecordedRequest;
use super::wire::{self, Api};
use crate::support::http::{self, ConnCtl};
use crate::support::wait_for;

/// A one-shot latch: replies gated on it wait (in flight) until `open()` is called.
#[derive(Clone, Debug)]
pub struct Gate(Arc<watch::Sender<bool>>);

impl Default for Gate {
    fn default() -> Self {
        Gate(Arc::new(watch::channel(false).0))
    }
}

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }
    pub fn open(&self) {
        self.0.send_replace(true);
    }
    pub fn is_open(&self) -> bool {
        *self.0.borrow()
    }
    pub async fn wait(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|open| *open).await;
    }
}

#[derive(Clone, Debug)]
pub(super) enum Kind {
    Message {
        text: Option<String>,
        tool_calls: Vec<(String, Value)>,
    },
    Error {
        status: u16,
        body: Value,
    },
    RateLimited(u64),
    Overloaded,
    Malformed,
    Disconnect,
}

/// What the fake model answers to one request.
#[derive(Clone, Debug)]
pub struct Reply {
    pub(super) kind: Kind,
    pub(super) delay: Option<Duration>,
    pub(super) gate: Option<Gate>,
    pub(super) usage: Option<(u64, u64)>,
    pub(super) chunk_delay: Option<Duration>,
    pub(super) cut_after: Option<usize>,
}

impl Reply {
    fn of(kind: Kind) -> Reply {
        Reply {
            kind,
            delay: None,
            gate: None,
            usage: None,
            chunk_delay: None,
            cut_after: None,
        }
    }
    /// A plain assistant message (`finish_reason` "stop" / `stop_reason` "end_turn").
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::of(Kind::Message {
            text: Some(text.into()),
            tool_calls: Vec::new(),
        })
    }
    /// One tool call; `args` is the arguments object.
    pub fn tool_call(name: &str, args: Value) -> Reply {
        Reply::tool_calls(vec![(name, args)])
    }
    /// Several tool calls in one response (ids `call_N` / `toolu_N`, unique in this fake).
    pub fn tool_calls(calls: Vec<(&str, Value)>) -> Reply {
        let tool_calls = calls.into_iter().map(|(n, a)| (n.to_string(), a)).collect();
        Reply::of(Kind::Message {
            text: None,
            tool_calls,
        })
    }
    /// Text followed by tool calls in the same response.
    pub fn text_and_tool_calls(text: impl Into<String>, calls: Vec<(&str, Value)>) -> Reply {
        let tool_calls = calls.into_iter().map(|(n, a)| (n.to_string(), a)).collect();
        Reply::of(Kind::Message {
            text: Some(text.into()),
            tool_calls,
        })
    }
    /// Any HTTP error with a literal JSON body, e.g.
    /// `error(500, json!({"error": {"message": "boom", "type": "server_error", "code": null}}))`.
    pub fn error(status: u16, body: Value) -> Reply {
        Reply::of(Kind::Error { status, body })
    }
    /// 429 with `Retry-After: secs` and the error shape of the endpoint called.
    pub fn rate_limited(retry_after_secs: u64) -> Reply {
        Reply::of(Kind::RateLimited(retry_after_secs))
    }
    /// Anthropic 529 `overloaded_error`; on the OpenAI endpoint a 503 `server_error`.
    pub fn overloaded() -> Reply {
        Reply::of(Kind::Overloaded)
    }
    /// 200 with a truncated, invalid JSON body (an invalid SSE event when streaming).
    pub fn malformed() -> Reply {
        Reply::of(Kind::Malformed)
    }
    /// The connection is closed without any response.
    pub fn disconnect() -> Reply {
        Reply::of(Kind::Disconnect)
    }
    /// Waits `d` before answering.
    pub fn delayed(mut self, d: Duration) -> Reply {
        self.delay = Some(d);
        self
    }
    /// Waits until `gate` is opened before answering (the request stays in flight).
    pub fn after(mut self, gate: Gate) -> Reply {
        self.gate = Some(gate);
        self
    }
    /// Overrides the reported token usage (default: about a quarter of the characters).
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Reply {
        self.usage = Some((prompt_tokens, completion_tokens));
        self
    }
    /// When streamed, writes one SSE event at a time with `d` between them.
    pub fn chunk_delay(mut self, d: Duration) -> Reply {
        self.chunk_delay = Some(d);
        self
    }
    /// When streamed, drops the connection after `events` SSE events (no final event/`[DONE]`).
    pub fn cut_stream_after(mut self, events: usize) -> Reply {
        self.cut_after = Some(events);
        self
    }
}

type Responder = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

pub(super) struct St {
    script: VecDeque<Reply>,
    default: Responder,
    requests: Vec<RecordedRequest>,
    in_flight: usize,
    max_in_flight: usize,
    /// Requests beyond this many in flight are answered 429 (a provider's concurrency limit).
    capacity: Option<usize>,
    /// Requests answered 429 for being over `capacity`.
    over_capacity: usize,
    /// Only the last this many requests are kept (long runs).
    keep: Option<usize>,
    api_key: Option<String>,
    pub(super) cache_prefixes: HashSet<String>,
    transcriptions: Vec<Transcription>,
    /// What `/audio/transcriptions` answers: the text, or an HTTP status.
    transcript: Result<String, u16>,
    /// What `GET /v1/models` lists.
    models: Vec<String>,
}

/// One call of `POST /v1/audio/transcriptions`.
#[derive(Clone, Debug)]
pub struct Transcription {
    pub model: String,
    pub file_name: String,
    pub size: usize,
    pub authorization: Option<String>,
}

pub(super) struct Inner {
    st: Mutex<St>,
    ids: AtomicU64,
    tool_ids: AtomicU64,
}

impl Inner {
    pub(super) fn st(&self) -> MutexGuard<'_, St> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Response ids.
    pub(super) fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::SeqCst) + 1
    }
    /// Tool call ids: `call_N` / `toolu_N` share one counter, so ids are unique in this fake.
    pub(super) fn next_tool_id(&self) -> u64 {
        self.tool_ids.fetch_add(1, Ordering::SeqCst) + 1
    }
}

/// Handle to a running fake LLM server. Cheap to clone.
#[derive(Clone)]
pub struct FakeLlm {
    inner: Arc<Inner>,
    port: u16,
}

impl FakeLlm {
    /// Binds 127.0.0.1:0 and serves in a spawned task. Initially every request is answered
    /// `Reply::text("echo: <last user text>")`.
    pub async fn start() -> FakeLlm {
        let default: Responder = Arc::new(|r: &RecordedRequest| {
            Reply::text(format!("echo: {}", r.last_user_text().unwrap_or_default()))
        });
        let st = St {
            script: VecDeque::new(),
            default,
            requests: Vec::new(),
            in_flight: 0,
            max_in_flight: 0,
            capacity: None,
            over_capacity: 0,
            keep: None,
            api_key: None,
            cache_prefixes: HashSet::new(),
            transcriptions: Vec::new(),
            transcript: Ok("hello from a voice note".into()),
            models: vec!["fake-model".into()],
        };
        let inner = Arc::new(Inner {
            st: Mutex::new(st),
            ids: AtomicU64::new(0),
            tool_ids: AtomicU64::new(0),
        });
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let port = http::serve(app, "fake llm").await;
        FakeLlm { inner, port }
    }

    /// What speech-to-text answers from now on: the transcript, or an HTTP error status.
    pub fn set_transcript(&self, transcript: Result<&str, u16>) {
        self.inner.st().transcript = transcript.map(str::to_owned);
    }
    /// The model ids `GET /v1/models` lists from now on.
    pub fn set_models(&self, models: &[&str]) {
        self.inner.st().models = models.iter().map(|m| m.to_string()).collect();
    }
    /// Every speech-to-text call so far.
    pub fn transcriptions(&self) -> Vec<Transcription> {
        self.inner.st().transcriptions.clone()
    }

    /// `http://127.0.0.1:PORT/v1` (OpenAI-style base URL).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
    /// `http://127.0.0.1:PORT` (for clients that append `/v1/messages` themselves).
    pub fn root_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Appends a scripted reply; requests consume the script in arrival order.
    pub fn push(&self, reply: Reply) {
        self.inner.st().script.push_back(reply);
    }
    /// Scripted replies not yet consumed.
    pub fn script_len(&self) -> usize {
        self.inner.st().script.len()
    }
    /// The responder used when the script is empty.
    pub fn set_default(&self, f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) {
        self.inner.st().default = Arc::new(f);
    }
    /// From now on the model answers "tool said: <the last tool result>", so the chat shows
    /// what a tool call came to (approvals, denials).
    pub fn echo_tool_results(&self) {
        self.set_default(|req: &RecordedRequest| {
            let last = req
                .tool_results()
                .last()
                .map(|(_, text)| text.clone())
                .unwrap_or_default();
            Reply::text(format!("tool said: {last}"))
        });
    }
    /// Requires this key (`Authorization: Bearer` for OpenAI, `x-api-key` for Anthropic).
    pub fn set_api_key(&self, key: Option<&str>) {
        self.inner.st().api_key = key.map(str::to_string);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.st().requests.clone()
    }
    /// Wait for the `n`th request (from 1) and return the tool results it carried, one text:
    /// what the tools of the call before it gave the model.
    pub async fn tool_output_seen_by(&self, n: usize, timeout: Duration) -> String {
        let seen = wait_for(
            timeout,
            &format!("model request {n}"),
            || self.requests().get(n - 1).cloned(),
            || format!("{} model calls", self.requests().len()),
        )
        .await;
        let texts: Vec<String> = seen.tool_results().into_iter().map(|(_, t)| t).collect();
        texts.join("\n")
    }
    /// Requests currently being served (including gated and delayed ones).
    pub fn in_flight(&self) -> usize {
        self.inner.st().in_flight
    }
    /// From now on a request arriving while `n` are in flight is answered 429 with
    /// `Retry-After: 1`, as a provider with a concurrency limit does.
    pub fn set_capacity(&self, n: usize) {
        self.inner.st().capacity = Some(n);
    }
    /// Keep only about the last `n` requests (a long run would hold every prompt).
    pub fn keep_requests(&self, n: usize) {
        self.inner.st().keep = Some(n);
    }
    /// Requests answered 429 for being over the capacity.
    pub fn over_capacity(&self) -> usize {
        self.inner.st().over_capacity
    }
    /// The highest `in_flight` seen so far.
    pub fn max_in_flight(&self) -> usize {
        self.inner.st().max_in_flight
    }

    /// Waits until at least `n` requests arrived; returns all of them.
    pub async fn wait_requests(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        let what = format!("fake llm: {n} requests");
        let check = || {
            let st = self.inner.st();
            (st.requests.len() >= n).then(|| st.requests.clone())
        };
        wait_for(timeout, &what, check, || self.describe()).await
    }

    /// Waits until a request matching `pred` arrived (`what` names it on timeout).
    pub async fn wait_request(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&RecordedRequest) -> bool,
    ) -> RecordedRequest {
        let check = || self.inner.st().requests.iter().find(|r| pred(r)).cloned();
        wait_for(timeout, what, check, || self.describe()).await
    }

    fn describe(&self) -> String {
        let st = self.inner.st();
        let lines: Vec<String> = st
            .requests
            .iter()
            .map(|r| format!("  {} last user text {:?}", r.path, r.last_user_text()))
            .collect();
        format!(
            "{} requests so far ({} in flight, {} scripted replies left):\n{}",
            st.requests.len(),
            st.in_flight,
            st.script.len(),
            lines.join("\n")
        )
    }
}

/// Decrements `in_flight` when the handler finishes or is dropped.
struct InFlight(Arc<Inner>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.st().in_flight -= 1;
    }
}

async fn handle(
    AxState(inner): AxState<Arc<Inner>>,
    ConnectInfo(conn): ConnectInfo<ConnCtl>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().trim_end_matches('/').to_string();
    if method == Method::POST && path == "/v1/audio/transcriptions" {
        return transcribe(&inner, &headers, &body);
    }
    let api = match (method.as_str(), path.as_str()) {
        ("POST", "/v1/chat/completions") => Api::OpenAi,
        ("POST", "/v1/messages") => Api::Anthropic,
        ("GET", "/v1/models") => {
            let anthropic = headers.contains_key("anthropic-version");
            let st = inner.st();
            // The key is checked as the real APIs check it (a wrong one is 401).
            let sent = if anthropic {
                headers.get("x-api-key").and_then(|v| v.to_str().ok())
            } else {
                headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("Bearer "))
            };
            if let Some(key) = &st.api_key
                && sent != Some(key.as_str())
            {
                let api = if anthropic {
                    Api::Anthropic
                } else {
                    Api::OpenAi
                };
                return wire::invalid(api, 401, "Incorrect API key provided");
            }
            return wire::models(anthropic, &st.models);
        }
        _ => return wire::not_found(&method, &path),
    };
    let _guard = {
        let mut st = inner.st();
        st.in_flight += 1;
        st.max_in_flight = st.max_in_flight.max(st.in_flight);
        InFlight(inner.clone())
    };
    let headers: BTreeMap<String, String> = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let parsed = serde_json::from_slice::<Value>(&body);
    let body_value = match &parsed {
        Ok(v) => v.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(&body).into_owned()),
    };
    let req = RecordedRequest {
        path,
        headers,
        body: body_value,
        at: Instant::now(),
    };
    let (rejection, reply) = {
        let mut st = inner.st();
        st.requests.push(req.clone());
        if let Some(keep) = st.keep
            && st.requests.len() > keep * 2
        {
            let cut = st.requests.len() - keep;
            st.requests.drain(..cut);
        }
        let rejection = match parsed {
            Err(e) => Some(wire::invalid(api, 400, &format!("invalid JSON body: {e}"))),
            Ok(_) => wire::check_request(api, &req, st.api_key.as_deref()),
        };
        let over = st.capacity.is_some_and(|c| st.in_flight > c);
        if over && rejection.is_none() {
            st.over_capacity += 1;
        }
        let reply = match rejection {
            Some(_) => None,
            None if over => Some(Reply::rate_limited(1)),
            None => Some(
                st.script
                    .pop_front()
                    .unwrap_or_else(|| (st.default.clone())(&req)),
            ),
        };
        (rejection, reply)
    };
    if let Some(r) = rejection {
        return r;
    }
    let reply = reply.unwrap_or_else(|| Reply::text(""));
    if let Some(gate) = &reply.gate {
        gate.wait().await;
    }
    if let Some(d) = reply.delay {
        tokio::time::sleep(d).await;
    }
    wire::render(&inner, api, &req, &reply, &conn)
}

/// `POST /v1/audio/transcriptions`: a multipart form with the recording as `file`.
fn transcribe(inner: &Inner, headers: &HeaderMap, body: &[u8]) -> Response {
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut form = serde_json::Map::new();
    http::parse_multipart(ct, body, &mut form);
    let mut st = inner.st();
    st.transcriptions.push(Transcription {
        model: form["model"].as_str().unwrap_or_default().to_owned(),
        file_name: form["file"]["file_name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        size: form["file"]["size"].as_u64().unwrap_or(0) as usize,
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
    match st.transcript.clone() {
        Ok(text) => axum::Json(json!({ "text": text })).into_response(),
        Err(status) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            axum::Json(json!({"error": {"message": "the fake cannot hear anything"}})),
        )
            .into_response(),
    }
}
