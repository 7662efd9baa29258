//! The dashboard: hermes in a browser, served by the daemon on the admin listener (it holds the
//! gateway's state; the API listener is an adapter that never sees it). Sign in with the admin
//! token or an operator API key; the session lives in an HttpOnly, SameSite=Strict cookie and
//! every form carries the session's CSRF token. Pages are rendered here (`pages.rs`: overview,
//! conversations, approvals; `jobs.rs`: scheduled jobs; `skills.rs`: skills; `mcp.rs`: MCP servers; `chat.rs`: a chat
//! with the agent through the HTTP API; `html.rs`: the frame) with two small embedded assets: no
//! build step.

mod chat;
mod html;
mod jobs;
mod mcp;
mod pages;
mod skills;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use dashmap::DashMap;

use crate::gateway::Shared;

/// Name of the session cookie.
const COOKIE: &str = "hermes_dashboard";
/// How long a sign-in lasts.
const SESSION_LIFE: Duration = Duration::from_secs(12 * 3600);

/// One signed-in browser.
#[derive(Debug, Clone)]
pub(crate) struct Login {
    /// Who signed in: `admin` or `api:<key name>`.
    pub who: String,
    /// The token every form of this session carries.
    pub csrf: String,
    until: Instant,
}

/// The signed-in browsers, by session id.
#[derive(Default)]
pub(crate) struct Logins(DashMap<String, Login>);

/// A random token (hex, 128 bits).
fn token() -> String {
    let mut bytes = [0u8; 16];
    // Without system randomness nobody can sign in (no guessable sessions).
    if getrandom::fill(&mut bytes).is_err() {
        return String::new();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The dashboard's routes, for the admin listener.
pub(crate) fn routes() -> Router<Arc<Shared>> {
    let logins = Arc::new(Logins::default());
    let guarded = Router::new()
        .route("/", get(pages::overview))
        .route("/events", get(pages::events))
        .route("/conversations", get(pages::conversations))
        .route("/conversations/{id}", get(pages::transcript))
        .route("/approvals", get(pages::approvals))
        .route("/approvals/{id}", post(pages::answer))
        .route("/jobs", get(jobs::list))
        .route("/jobs/{id}", post(jobs::act))
        .route("/skills", get(skills::list))
        .route("/skills/{name}", get(skills::view).post(skills::act))
        .route("/mcp-servers", get(mcp::list))
        .route("/chat", get(chat::chat))
        .route("/chat/send", post(chat::send))
        .route("/logout", post(logout))
        .route_layer(axum::middleware::from_fn_with_state(
            logins.clone(),
            signed_in,
        ));
    Router::new()
        .route("/login", get(login_page).post(login))
        .route("/assets/style.css", get(style))
        .route("/assets/app.js", get(script))
        .merge(guarded)
        .layer(axum::Extension(logins))
}

fn cookie_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            c.trim()
                .strip_prefix(&format!("{COOKIE}="))
                .map(str::to_owned)
        })
}

/// Let a signed-in browser through (with its [`Login`]); others go to the sign-in page.
async fn signed_in(
    State(logins): State<Arc<Logins>>,
    mut request: Request,
    next: Next,
) -> Response {
    let login = cookie_of(request.headers()).and_then(|id| {
        let login = logins.0.get(&id)?.clone();
        if login.until < Instant::now() {
            logins.0.remove(&id);
            return None;
        }
        Some(login)
    });
    match login {
        Some(login) => {
            request.extensions_mut().insert(login);
            next.run(request).await
        }
        None if request.method() == axum::http::Method::GET => {
            Redirect::to("/login").into_response()
        }
        None => (StatusCode::UNAUTHORIZED, "sign in first\n").into_response(),
    }
}

/// Who `key` signs in as: the admin token, or an operator API key.
fn who_has(shared: &Shared, key: &str) -> Option<String> {
    let config = shared.config();
    let admin = config.admin.token.expose();
    if !admin.is_empty() && hermes_listener::bearer::same(key.as_bytes(), admin.as_bytes()) {
        return Some("admin".into());
    }
    config
        .api
        .keys
        .iter()
        .filter(|(_, k)| k.operator && !k.token.is_empty())
        .find(|(_, k)| hermes_listener::bearer::same(key.as_bytes(), k.token.expose().as_bytes()))
        .map(|(name, _)| format!("api:{name}"))
}

/// Whether anyone can sign in at all.
fn can_sign_in(shared: &Shared) -> bool {
    let config = shared.config();
    !config.admin.token.is_empty()
        || config
            .api
            .keys
            .values()
            .any(|k| k.operator && !k.token.is_empty())
}

/// The fields of a form body.
pub(crate) fn form(body: &[u8]) -> std::collections::HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

/// The fields of a form sent by `login`'s own page (carrying its CSRF token); `None` for any
/// other (answer it with [`stale`]).
pub(crate) fn checked_form(
    body: &[u8],
    login: &Login,
) -> Option<std::collections::HashMap<String, String>> {
    let fields = form(body);
    (fields.get("csrf") == Some(&login.csrf)).then_some(fields)
}

/// The answer to a form without the session's CSRF token.
pub(crate) fn stale() -> Response {
    (StatusCode::FORBIDDEN, "stale form: reload the page\n").into_response()
}

async fn login_page(State(shared): State<Arc<Shared>>) -> Response {
    html::page_plain("Sign in", &html::login_form(can_sign_in(&shared), None)).into_response()
}

async fn login(
    State(shared): State<Arc<Shared>>,
    axum::Extension(logins): axum::Extension<Arc<Logins>>,
    body: Bytes,
) -> Response {
    let key = form(&body).remove("key").unwrap_or_default();
    let Some(who) = who_has(&shared, key.trim()) else {
        tracing::warn!("dashboard: a sign-in with a wrong key");
        let body = html::login_form(
            can_sign_in(&shared),
            Some("That key is not one that opens the dashboard."),
        );
        return (StatusCode::UNAUTHORIZED, html::page_plain("Sign in", &body)).into_response();
    };
    let (id, csrf) = (token(), token());
    if id.is_empty() || csrf.is_empty() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "no system randomness for a session\n",
        )
            .into_response();
    }
    // Forget sessions that ran out.
    let now = Instant::now();
    logins.0.retain(|_, l| l.until > now);
    tracing::info!(%who, "dashboard: signed in");
    logins.0.insert(
        id.clone(),
        Login {
            who,
            csrf,
            until: now + SESSION_LIFE,
        },
    );
    let cookie = format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        SESSION_LIFE.as_secs()
    );
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

async fn logout(
    headers: HeaderMap,
    axum::Extension(logins): axum::Extension<Arc<Logins>>,
    axum::Extension(login): axum::Extension<Login>,
    body: Bytes,
) -> Response {
    if checked_form(&body, &login).is_none() {
        return stale();
    }
    if let Some(id) = cookie_of(&headers) {
        logins.0.remove(&id);
    }
    let gone = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    ([(header::SET_COOKIE, gone)], Redirect::to("/login")).into_response()
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("assets/style.css"),
    )
        .into_response()
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("assets/app.js"),
    )
        .into_response()
}
