//! The dashboard's HTML: escaping, the page frame (navigation, sign-out), and the pieces the
//! pages share. Times are written as `<time datetime=…>` and shown in the viewer's zone by
//! `assets/app.js`.

use std::fmt::Write;

use axum::response::Html;

use super::Login;

/// Text made safe for HTML.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A moment (milliseconds since the epoch), shown in the viewer's zone.
pub(crate) fn time(ms: i64) -> String {
    let iso =
        jiff::Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| t.to_string());
    format!("<time datetime=\"{iso}\">{iso}</time>")
}

/// A duration in words.
pub(crate) fn ago(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86400 => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
        _ => format!("{} d {} h", secs / 86400, secs % 86400 / 3600),
    }
}

fn head(title: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · hermes</title><link rel=\"stylesheet\" href=\"/assets/style.css\">\
         <script src=\"/assets/app.js\" defer></script></head>",
        esc(title)
    )
}

/// A page for a signed-in browser: navigation, the body, sign-out.
pub(crate) fn page(title: &str, current: &str, login: &Login, body: &str) -> Html<String> {
    let mut nav = String::new();
    for (href, label) in [
        ("/", "Overview"),
        ("/conversations", "Conversations"),
        ("/chat", "Chat"),
        ("/approvals", "Approvals"),
        ("/jobs", "Jobs"),
        ("/skills", "Skills"),
        ("/mcp-servers", "MCP"),
    ] {
        let here = if href == current {
            " class=\"here\""
        } else {
            ""
        };
        let _ = write!(nav, "<a href=\"{href}\"{here}>{label}</a>");
    }
    Html(format!(
        "{}<body><header><span class=\"brand\">hermes</span><nav>{nav}</nav>\
         <form method=\"post\" action=\"/logout\" class=\"signout\">{}\
         <span class=\"who\">{}</span><button>Sign out</button></form></header>\
         <main><h1>{}</h1>{body}</main></body></html>",
        head(title),
        csrf_field(login),
        esc(&login.who),
        esc(title)
    ))
}

/// A page before signing in.
pub(crate) fn page_plain(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "{}<body><header><span class=\"brand\">hermes</span></header><main class=\"narrow\">\
         <h1>{}</h1>{body}</main></body></html>",
        head(title),
        esc(title)
    ))
}

/// The hidden field every form of a session carries.
pub(crate) fn csrf_field(login: &Login) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(&login.csrf)
    )
}

pub(crate) fn login_form(possible: bool, error: Option<&str>) -> String {
    if !possible {
        return "<p class=\"empty\">Nobody can sign in yet: set <code>admin.token</code> \
                (<code>HERMES_ADMIN_TOKEN</code>) or give an API key <code>operator = true</code> \
                in <code>[api.keys.&lt;name&gt;]</code>, then reload the daemon.</p>"
            .into();
    }
    let error = error.map_or_else(String::new, |e| {
        format!("<p class=\"error\">{}</p>", esc(e))
    });
    format!(
        "{error}<form method=\"post\" action=\"/login\" class=\"card\">\
         <label for=\"key\">The admin token or an operator API key</label>\
         <input id=\"key\" name=\"key\" type=\"password\" autocomplete=\"current-password\" required autofocus>\
         <button>Sign in</button></form>"
    )
}

/// A message when a list is empty.
pub(crate) fn empty(text: &str) -> String {
    format!("<p class=\"empty\">{}</p>", esc(text))
}
