//! Wire formats for `fake::FakeLlm`: OpenAI chat-completion and Anthropic messages response
//! bodies (plain JSON and SSE streams), their error shapes, request validation, token usage,
//! and the Anthropic prompt-cache simulation.
//!
//! Cache simulation (Anthropic only): the request is read in cache order (tools, system,
//! messages); every block carrying `cache_control` is a breakpoint, and the prefix up to it is
//! the JSON serialization of everything before and including it (object keys normalized, so
//! "byte-identical" means equal after JSON normalization). The longest breakpoint prefix seen
//! in an earlier request is reported as `cache_read_input_tokens`; the rest up to the last
//! breakpoint as `cache_creation_input_tokens`. No minimum length, no expiry. Tokens are
//! approximated as characters / 4.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::RecordedRequest;
use super::fake::{Inner, Kind, Reply};
use crate::support::http::ConnCtl;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn json_response(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn openai_error(message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

fn anthropic_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// A 400/401/404-style rejection in the shape of `api`.
pub fn invalid(api: Api, status: u16, message: &str) -> Response {
    let body = match (api, status) {
        (Api::OpenAi, 401) => openai_error(
            message,
            "invalid_request_error",
            None,
            Some("invalid_api_key"),
        ),
        (Api::OpenAi, _) => openai_error(message, "invalid_request_error", None, None),
        (Api::Anthropic, 401) => anthropic_error("authentication_error", message),
        (Api::Anthropic, 404) => anthropic_error("not_found_error", message),
        (Api::Anthropic, _) => anthropic_error("invalid_request_error", message),
    };
    json_response(status, &body)
}

pub fn not_found(method: &Method, path: &str) -> Response {
    invalid(Api::OpenAi, 404, &format!("Invalid URL ({method} {path})"))
}

/// `GET /v1/models` (Anthropic shape when an `anthropic-version` header is sent).
pub fn models(anthropic: bool, ids: &[String]) -> Response {
    let body = if anthropic {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| {
                json!({"type": "model", "id": id, "display_name": id,
                             "created_at": "2025-01-01T00:00:00Z"})
            })
            .collect();
        json!({"data": data, "has_more": false, "first_id": ids.first(), "last_id": ids.last()})
    } else {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| {
                json!({"id": id, "object": "model", "created": 1_700_000_000,
                             "owned_by": "fake"})
            })
            .collect();
        json!({"object": "list", "data": data})
    };
    json_response(200, &body)
}

/// Authentication, required fields and tool-call pairing. `Some(response)` rejects.
pub fn check_request(api: Api, req: &RecordedRequest, key: Option<&str>) -> Option<Response> {
    let b = &req.body;
    match api {
        Api::Anthropic => {
            let Some(got) = req.header("x-api-key") else {
                return Some(invalid(api, 401, "x-api-key header is required"));
            };
            if key.is_some_and(|k| k != got) {
                return Some(invalid(api, 401, "invalid x-api-key"));
            }
            if req.header("anthropic-version").is_none() {
                return Some(invalid(api, 400, "anthropic-version: header is required"));
            }
            for field in ["model", "max_tokens", "messages"] {
                if b[field].is_null() {
                    return Some(invalid(api, 400, &format!("{field}: Field required")));
                }
            }
        }
        Api::OpenAi => {
            let bearer = req
                .header("authorization")
                .and_then(|a| a.strip_prefix("Bearer "));
            if let Some(k) = key.filter(|k| bearer != Some(*k)) {
                let shown = bearer.unwrap_or("");
                let msg = format!("Incorrect API key provided: {shown}. (expected {k})");
                return Some(invalid(api, 401, &msg));
            }
            for field in ["model", "messages"] {
                if b[field].is_null() {
                    let msg = format!("Missing required parameter: '{field}'.");
                    let body = openai_error(
                        &msg,
                        "invalid_request_error",
                        Some(field),
                        Some("missing_required_parameter"),
                    );
                    return Some(json_response(400, &body));
                }
            }
        }
    }
    let Some(msgs) = b["messages"].as_array() else {
        return Some(invalid(api, 400, "messages: Input should be a valid list"));
    };
    check_tool_pairing(api, msgs).map(|m| invalid(api, 400, &m))
}

/// Every tool call must be answered right after it, and every result must answer a call.
fn check_tool_pairing(api: Api, msgs: &[Value]) -> Option<String> {
    let blocks = |m: &Value, kind: &str, id: &str| -> Vec<String> {
        let content = m["content"].as_array().into_iter().flatten();
        content
            .filter(|b| b["type"] == kind)
            .filter_map(|b| b[id].as_str().map(str::to_string))
            .collect()
    };
    let mut open: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        match api {
            Api::OpenAi => {
                if m["role"] == "tool" {
                    let id = m["tool_call_id"].as_str().unwrap_or("");
                    if !open.iter().any(|o| o == id) {
                        return Some("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.".into());
                    }
                    open.retain(|o| o != id);
                    continue;
                }
                if !open.is_empty() {
                    return Some(format!(
                        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                        open.join(", ")
                    ));
                }
                let calls = m["tool_calls"].as_array().into_iter().flatten();
                open = calls
                    .filter_map(|c| c["id"].as_str().map(str::to_string))
                    .collect();
            }
            Api::Anthropic => {
                let results = blocks(m, "tool_result", "tool_use_id");
                if let Some(stray) = results.iter().find(|r| !open.contains(r)) {
                    return Some(format!(
                        "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {stray}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    ));
                }
                if let Some(missing) = open.iter().find(|o| !results.contains(o)) {
                    return Some(format!(
                        "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {missing}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                        i - 1
                    ));
                }
                open = if m["role"] == "assistant" {
                    blocks(m, "tool_use", "id")
                } else {
                    Vec::new()
                };
            }
        }
    }
    let missing = open.join(", ");
    (!open.is_empty()).then(|| match api {
        Api::OpenAi => format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {missing}"),
        Api::Anthropic => format!("messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {missing}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", msgs.len() - 1),
    })
}

/// Serialized prefixes up to each `cache_control` breakpoint, in order.
fn cache_prefixes(body: &Value) -> Vec<String> {
    let mut acc = String::new();
    let mut out = Vec::new();
    let mut visit = |v: &Value, acc: &mut String| {
        acc.push_str(&v.to_string());
        if v.get("cache_control").is_some() {
            out.push(acc.clone());
        }
    };
    for t in body["tools"].as_array().into_iter().flatten() {
        visit(t, &mut acc);
    }
    match &body["system"] {
        Value::Array(blocks) => blocks.iter().for_each(|b| visit(b, &mut acc)),
        s => visit(s, &mut acc),
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        acc.push_str(m["role"].as_str().unwrap_or(""));
        match &m["content"] {
            Value::Array(blocks) => blocks.iter().for_each(|b| visit(b, &mut acc)),
            c => visit(c, &mut acc),
        }
    }
    out
}

struct Usage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_creation: u64,
}

fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}

fn usage(inner: &Inner, api: Api, req: &RecordedRequest, reply: &Reply, out_chars: usize) -> Usage {
    let (mut input, output) = reply
        .usage
        .unwrap_or((tokens(req.body.to_string().len()), tokens(out_chars)));
    let (mut cache_read, mut cache_creation) = (0, 0);
    if api == Api::Anthropic {
        let prefixes = cache_prefixes(&req.body);
        let mut st = inner.st();
        let hit = prefixes
            .iter()
            .rev()
            .find(|p| st.cache_prefixes.contains(*p));
        let read_chars = hit.map_or(0, |p| p.len());
        let last_chars = prefixes.last().map_or(0, |p| p.len());
        if read_chars > 0 {
            cache_read = tokens(read_chars);
        }
        if last_chars > read_chars {
            cache_creation = tokens(last_chars - read_chars);
        }
        st.cache_prefixes.extend(prefixes);
        input = input.saturating_sub(cache_read + cache_creation).max(1);
    }
    Usage {
        input,
        output,
        cache_read,
        cache_creation,
    }
}

/// Splits `s` into pieces of at most `n` chars.
fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

fn sse(body: String, reply: &Reply, conn: &ConnCtl) -> Response {
    let mut resp = (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response();
    if reply.chunk_delay.is_some() || reply.cut_after.is_some() {
        conn.pace(reply.chunk_delay.unwrap_or_default(), reply.cut_after);
        let close = header::HeaderValue::from_static("close");
        resp.headers_mut().insert(header::CONNECTION, close);
    }
    resp
}

/// Builds the response for `reply` in the format of `api` (streaming if the request asked).
pub(super) fn render(
    inner: &Inner,
    api: Api,
    req: &RecordedRequest,
    reply: &Reply,
    conn: &ConnCtl,
) -> Response {
    let stream = req.is_stream();
    let (text, calls) = match &reply.kind {
        Kind::Message { text, tool_calls } => (text.clone(), tool_calls.clone()),
        Kind::Error { status, body } => return json_response(*status, body),
        Kind::RateLimited(secs) => {
            let body = match api {
                Api::OpenAi => openai_error(
                    &format!("Rate limit reached for requests. Please try again in {secs}s."),
                    "requests",
                    None,
                    Some("rate_limit_exceeded"),
                ),
                Api::Anthropic => anthropic_error(
                    "rate_limit_error",
                    "Number of request tokens has exceeded your per-minute rate limit",
                ),
            };
            let mut r = json_response(429, &body);
            r.headers_mut().insert(
                header::RETRY_AFTER,
                secs.to_string().parse().expect("header"),
            );
            return r;
        }
        Kind::Overloaded => {
            return match api {
                Api::Anthropic => {
                    json_response(529, &anthropic_error("overloaded_error", "Overloaded"))
                }
                Api::OpenAi => json_response(
                    503,
                    &openai_error(
                        "The engine is currently overloaded, please try again later.",
                        "server_error",
                        None,
                        None,
                    ),
                ),
            };
        }
        Kind::Malformed if stream => {
            return sse("data: {\"id\": \"broken\", \"choices\": [{\"delta\": {\"content\n\ndata: [DONE]\n\n".into(), reply, conn);
        }
        Kind::Malformed => {
            let body = "{\"id\": \"broken\", \"object\": \"chat.completion\", \"choices\": [{\"message\": ";
            return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
        }
        Kind::Disconnect => {
            conn.kill();
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let calls: Vec<(String, String, Value)> = calls
        .into_iter()
        .map(|(name, args)| {
            let n = inner.next_tool_id();
            let id = match api {
                Api::OpenAi => format!("call_{n}"),
                Api::Anthropic => format!("toolu_{n}"),
            };
            (id, name, args)
        })
        .collect();
    let out_chars = text.as_deref().map_or(0, str::len)
        + calls
            .iter()
            .map(|c| c.1.len() + c.2.to_string().len())
            .sum::<usize>();
    let u = usage(inner, api, req, reply, out_chars);
    let model = req.model().unwrap_or("fake-model").to_string();
    let msg_id = inner.next_id();
    match (api, stream) {
        (Api::OpenAi, false) => json_response(200, &openai_body(msg_id, &model, text, &calls, &u)),
        (Api::OpenAi, true) => {
            let include_usage = req.body["stream_options"]["include_usage"] == true;
            sse(
                openai_stream(msg_id, &model, text, &calls, &u, include_usage),
                reply,
                conn,
            )
        }
        (Api::Anthropic, false) => {
            json_response(200, &anthropic_body(msg_id, &model, text, &calls, &u))
        }
        (Api::Anthropic, true) => sse(
            anthropic_stream(msg_id, &model, text, &calls, &u),
            reply,
            conn,
        ),
    }
}

fn openai_usage(u: &Usage) -> Value {
    json!({"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output})
}

fn openai_body(
    id: u64,
    model: &str,
    text: Option<String>,
    calls: &[(String, String, Value)],
    u: &Usage,
) -> Value {
    let mut message = json!({"role": "assistant", "content": text, "refusal": null});
    if !calls.is_empty() {
        let tc: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
            .collect();
        message["tool_calls"] = json!(tc);
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    json!({"id": format!("chatcmpl-fake{id}"), "object": "chat.completion", "created": now_unix(),
           "model": model, "system_fingerprint": "fp_fake",
           "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
           "usage": openai_usage(u)})
}

fn openai_stream(
    id: u64,
    model: &str,
    text: Option<String>,
    calls: &[(String, String, Value)],
    u: &Usage,
    include_usage: bool,
) -> String {
    let created = now_unix();
    let mut out = String::new();
    let mut chunk = |choices: Value, usage: Value| {
        let mut c = json!({"id": format!("chatcmpl-fake{id}"), "object": "chat.completion.chunk",
                           "created": created, "model": model, "system_fingerprint": "fp_fake",
                           "choices": choices});
        if include_usage {
            c["usage"] = usage;
        }
        out.push_str(&format!("data: {c}\n\n"));
    };
    let delta = |d: Value, finish: Value| json!([{"index": 0, "delta": d, "logprobs": null, "finish_reason": finish}]);
    let first_content = if text.is_some() {
        json!("")
    } else {
        Value::Null
    };
    chunk(
        delta(
            json!({"role": "assistant", "content": first_content, "refusal": null}),
            Value::Null,
        ),
        Value::Null,
    );
    for piece in pieces(text.as_deref().unwrap_or(""), 8) {
        chunk(delta(json!({"content": piece}), Value::Null), Value::Null);
    }
    for (i, (call_id, name, args)) in calls.iter().enumerate() {
        let first = json!({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                           "function": {"name": name, "arguments": ""}}]});
        chunk(delta(first, Value::Null), Value::Null);
        for frag in pieces(&args.to_string(), 10) {
            let d = json!({"tool_calls": [{"index": i, "function": {"arguments": frag}}]});
            chunk(delta(d, Value::Null), Value::Null);
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    chunk(delta(json!({}), json!(finish)), Value::Null);
    if include_usage {
        chunk(json!([]), openai_usage(u));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

fn anthropic_usage(u: &Usage) -> Value {
    json!({"input_tokens": u.input, "output_tokens": u.output,
           "cache_creation_input_tokens": u.cache_creation, "cache_read_input_tokens": u.cache_read})
}

fn anthropic_body(
    id: u64,
    model: &str,
    text: Option<String>,
    calls: &[(String, String, Value)],
    u: &Usage,
) -> Value {
    let mut content: Vec<Value> = text
        .into_iter()
        .map(|t| json!({"type": "text", "text": t}))
        .collect();
    content.extend(calls.iter().map(
        |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
    ));
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    json!({"id": format!("msg_fake{id}"), "type": "message", "role": "assistant", "model": model,
           "content": content, "stop_reason": stop, "stop_sequence": null, "usage": anthropic_usage(u)})
}

fn anthropic_stream(
    id: u64,
    model: &str,
    text: Option<String>,
    calls: &[(String, String, Value)],
    u: &Usage,
) -> String {
    let mut out = String::new();
    let mut event =
        |name: &str, data: Value| out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    let mut start_usage = anthropic_usage(u);
    start_usage["output_tokens"] = json!(1);
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_fake{id}"),
        "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null,
        "stop_sequence": null, "usage": start_usage}}),
    );
    event("ping", json!({"type": "ping"}));
    let mut index = 0;
    if let Some(t) = text {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}),
        );
        for piece in pieces(&t, 8) {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
        index += 1;
    }
    for (call_id, name, input) in calls {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}}),
        );
        for frag in pieces(&input.to_string(), 10) {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": frag}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
        index += 1;
    }
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": u.output}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}
