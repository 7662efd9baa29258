//! The dashboard's pages: the overview (live over server-sent events), the conversations (list,
//! search, one transcript with its tool calls folded), and the confirmations waiting for an
//! answer (allow or deny, bound to the exact call as in a chat).

use std::convert::Infallible;
use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::html::{ago, csrf_field, empty, esc, page, time};
use super::{Login, checked_form, stale};
use crate::conversation::Role;
use crate::gateway::Shared;
use crate::gateway::ops::status::{StatusReport, report};
use crate::policy::Answer;
use crate::store::{SearchScope, StoredMessage};

/// Conversations per page of the list.
const PAGE: usize = 50;

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The overview's live part.
fn overview_of(r: &StatusReport) -> String {
    let mut out = String::from("<section class=\"cards\">");
    for (label, value) in [
        ("Turns running", r.running_turns.to_string()),
        ("Active sessions", r.active_sessions.to_string()),
        ("Waiting in the inbox", r.inbox_open.to_string()),
        ("Replies pending", r.outbox_pending.to_string()),
        ("Replies failed", r.outbox_failed.to_string()),
        ("Memory", mib(r.resident_bytes)),
        ("Store", mib(r.store_bytes)),
        ("Up for", ago(r.uptime_secs)),
    ] {
        let _ = write!(
            out,
            "<div class=\"card\"><div class=\"label\">{label}</div><div class=\"value\">{}</div></div>",
            esc(&value)
        );
    }
    out.push_str("</section><h2>Platforms</h2>");
    if r.adapters.is_empty() {
        out.push_str(&empty(
            "No platform is configured: set a token (see hermes doctor).",
        ));
    } else {
        out.push_str("<div class=\"table\"><table><tr><th>Platform</th><th>State</th><th>Last sign of life</th><th>Restarts</th><th>Last error</th></tr>");
        for a in &r.adapters {
            let state = if a.ready {
                "connected"
            } else {
                a.state.as_str()
            };
            let _ = write!(
                out,
                "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{} ago</td><td>{}</td><td>{}</td></tr>",
                if a.ready { "ok" } else { "bad" },
                esc(&a.platform),
                esc(state),
                ago(a.silent_secs),
                a.restarts,
                esc(a.last_error.as_deref().unwrap_or(""))
            );
        }
        out.push_str("</table></div>");
    }
    if !r.mcp.is_empty() {
        out.push_str(
            "<h2>MCP servers</h2><div class=\"table\"><table><tr><th>Server</th><th>State</th><th>Tools</th></tr>",
        );
        for m in &r.mcp {
            let _ = write!(
                out,
                "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
                if m.up { "ok" } else { "bad" },
                esc(&m.name),
                esc(&m.state),
                m.tools
            );
        }
        out.push_str("</table></div>");
    }
    let _ = write!(
        out,
        "<p class=\"meta\">hermes {} · model {} · pid {}{}</p>",
        esc(&r.version),
        esc(&r.model),
        r.pid,
        r.reload_error
            .as_deref()
            .map(|e| format!(
                " · <span class=\"error\">last reload failed: {}</span>",
                esc(e)
            ))
            .unwrap_or_default()
    );
    out
}

pub(crate) async fn overview(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
) -> Response {
    let r = report(&shared).await;
    let body = format!(
        "<div id=\"live\" data-events=\"/events\">{}</div>",
        overview_of(&r)
    );
    page("Overview", "/", &login, &body).into_response()
}

/// The overview's live part every 2 s, as server-sent events.
pub(crate) async fn events(State(shared): State<Arc<Shared>>) -> Response {
    let stream = futures_util::stream::unfold(shared, |shared| async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        if shared.intake.is_cancelled() {
            return None;
        }
        let html = overview_of(&report(&shared).await);
        Some((Ok::<_, Infallible>(Event::default().data(html)), shared))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    offset: Option<usize>,
}

pub(crate) async fn conversations(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
    Query(query): Query<ListQuery>,
) -> Response {
    let q = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    let mut body = format!(
        "<form method=\"get\" action=\"/conversations\" class=\"search\">\
         <input name=\"q\" type=\"search\" placeholder=\"Search everything that was said\" value=\"{}\">\
         <button>Search</button></form>",
        esc(q.unwrap_or(""))
    );
    if let Some(q) = q {
        match shared
            .store
            .search_messages(q, SearchScope::All, 20, 1)
            .await
        {
            Ok(found) if found.is_empty() => body.push_str(&empty("Nothing said matches that.")),
            Ok(found) => {
                for hits in found {
                    let _ = write!(
                        body,
                        "<article class=\"hit\"><h3><a href=\"/conversations/{}\">{}</a></h3>",
                        hits.session.id,
                        esc(&hits.session.key.to_string())
                    );
                    for run in &hits.excerpts {
                        body.push_str("<div class=\"excerpt\">");
                        for m in run {
                            let _ = write!(
                                body,
                                "<p class=\"{}{}\">{} {}</p>",
                                role_class(m.role),
                                if m.hit { " match" } else { "" },
                                time(m.created_at),
                                esc(&m.content)
                            );
                        }
                        body.push_str("</div>");
                    }
                    body.push_str("</article>");
                }
            }
            Err(e) => body.push_str(&empty(&format!("The store did not answer: {e}"))),
        }
        return page("Conversations", "/conversations", &login, &body).into_response();
    }
    let offset = query.offset.unwrap_or(0);
    match shared.store.sessions_list(PAGE, offset).await {
        Ok(list) if list.is_empty() && offset == 0 => body.push_str(&empty(
            "No conversations yet. When someone writes to the bot, the conversation shows here.",
        )),
        Ok(list) => {
            body.push_str("<div class=\"table\"><table><tr><th>Conversation</th><th>Messages</th><th>Last active</th><th>State</th></tr>");
            for s in &list {
                let _ = write!(
                    body,
                    "<tr><td><a href=\"/conversations/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    s.id,
                    esc(&s.key.to_string()),
                    s.messages,
                    time(s.updated_at),
                    if s.ended_at.is_some() {
                        "ended"
                    } else {
                        "active"
                    }
                );
            }
            body.push_str("</table></div>");
            if list.len() == PAGE {
                let _ = write!(
                    body,
                    "<p><a href=\"/conversations?offset={}\">Older conversations →</a></p>",
                    offset + PAGE
                );
            }
        }
        Err(e) => body.push_str(&empty(&format!("The store did not answer: {e}"))),
    }
    page("Conversations", "/conversations", &login, &body).into_response()
}

fn role_class(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Tool => "tool",
    }
}

pub(crate) async fn transcript(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
    Path(id): Path<i64>,
) -> Response {
    let (summary, messages) = match (
        shared.store.session_summary(id).await,
        shared.store.session_messages(id).await,
    ) {
        (Ok(Some(s)), Ok(Some(m))) => (s, m),
        (Ok(None), _) | (_, Ok(None)) => {
            let body = empty("There is no such conversation.");
            return (
                StatusCode::NOT_FOUND,
                page("Conversation", "/conversations", &login, &body),
            )
                .into_response();
        }
        (Err(e), _) | (_, Err(e)) => {
            let body = empty(&format!("The store did not answer: {e}"));
            return page("Conversation", "/conversations", &login, &body).into_response();
        }
    };
    let mut body = format!(
        "<p class=\"meta\">{} · started {} · {} messages</p><div class=\"transcript\">",
        esc(&summary.key.to_string()),
        time(summary.created_at),
        summary.messages
    );
    body.push_str(&bubbles(&messages));
    body.push_str("</div>");
    page("Conversation", "/conversations", &login, &body).into_response()
}

/// Messages as chat bubbles, tool calls and results folded (everything escaped and scrubbed).
pub(crate) fn bubbles(messages: &[StoredMessage]) -> String {
    let mut body = String::new();
    for m in messages {
        let msg = &m.message;
        match msg.role {
            Role::Tool => {
                let _ = write!(
                    body,
                    "<details class=\"tool\"><summary>result of {}</summary><pre>{}</pre></details>",
                    esc(msg.tool_name.as_deref().unwrap_or("a tool")),
                    esc(&hermes_adapter::scrub(&msg.content))
                );
            }
            role => {
                if !msg.content.trim().is_empty() {
                    let _ = write!(
                        body,
                        "<div class=\"bubble {}\">{}<div class=\"text\">{}</div></div>",
                        role_class(role),
                        time(m.created_at),
                        esc(&msg.content)
                    );
                }
                for call in &msg.tool_calls {
                    let _ = write!(
                        body,
                        "<details class=\"tool\"><summary>called {}</summary><pre>{}</pre></details>",
                        esc(&call.name),
                        esc(&hermes_adapter::scrub(&call.arguments))
                    );
                }
            }
        }
    }
    body
}

pub(crate) async fn approvals(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
) -> Response {
    let pending = shared.approvals.all();
    let mut body = String::new();
    if pending.is_empty() {
        body.push_str(&empty(
            "Nothing is waiting for a confirmation. A tool call that needs one shows here while the person is asked.",
        ));
    }
    let now = hermes_adapter::now_millis();
    for p in pending {
        let _ = write!(
            body,
            "<article class=\"approval\"><h3>{}</h3><p class=\"meta\">{} · asked {} · waiting {}</p>\
             <pre>{}</pre><form method=\"post\" action=\"/approvals/{}\">{}\
             <button name=\"answer\" value=\"once\" class=\"allow\">Allow once</button>\
             <button name=\"answer\" value=\"deny\" class=\"deny\">Deny</button></form></article>",
            esc(&p.subject),
            esc(&p.session.to_string()),
            esc(p.requester.as_str()),
            ago(((now - p.opened_at).max(0) / 1000) as u64),
            esc(&hermes_adapter::scrub(&p.detail)),
            esc(&p.id),
            csrf_field(&login)
        );
    }
    page("Approvals", "/approvals", &login, &body).into_response()
}

pub(crate) async fn answer(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let Some(fields) = checked_form(&body, &login) else {
        return stale();
    };
    let answer = match fields.get("answer").map(String::as_str) {
        Some("once") => Answer::Once,
        Some("deny") => Answer::Deny,
        _ => return (StatusCode::BAD_REQUEST, "answer once or deny\n").into_response(),
    };
    match shared.approvals.resolve_as_operator(&id, |_| true, answer) {
        Ok(r) => {
            tracing::info!(approval = %id, tool = %r.subject, ?answer, who = %login.who, "confirmation answered from the dashboard")
        }
        Err(_) => {
            tracing::info!(approval = %id, "dashboard answer to a confirmation no longer waiting")
        }
    }
    Redirect::to("/approvals").into_response()
}
