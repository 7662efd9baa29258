//! The dashboard's skills: every skill, bundled and the user's, with its uses and whether it is
//! on; one skill's instructions, requirements and files; turning one off or on again (the same
//! list `hermes skills disable|enable` writes, seen by new conversations).

use std::fmt::Write;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use super::html::{csrf_field, empty, esc, page, time};
use super::{Login, checked_form, stale};
use crate::gateway::Shared;
use crate::skills::{Skill, SkillLibrary, SkillSources};

async fn library(shared: &Shared) -> SkillLibrary {
    let sources = SkillSources::for_home(&shared.config().home);
    tokio::task::spawn_blocking(move || SkillLibrary::load(&sources))
        .await
        .unwrap_or_default()
}

/// The form that turns `name` on or off.
fn switch(login: &Login, name: &str, on: bool) -> String {
    let (value, label, class) = if on {
        ("disable", "Turn off", "deny")
    } else {
        ("enable", "Turn on", "allow")
    };
    format!(
        "<form method=\"post\" action=\"/skills/{}\" class=\"inline\">{}\
         <button name=\"do\" value=\"{value}\" class=\"{class}\">{label}</button></form>",
        esc(name),
        csrf_field(login)
    )
}

fn source_of(skill: &Skill) -> &'static str {
    if skill.overrides_bundled {
        "yours (replaces the bundled one)"
    } else if skill.source_label() == "bundled" {
        "bundled"
    } else {
        "yours"
    }
}

pub(crate) async fn list(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
) -> Response {
    let library = library(&shared).await;
    let mut all: Vec<(&Skill, bool)> = library
        .skills()
        .iter()
        .map(|s| (s, true))
        .chain(library.turned_off().iter().map(|s| (s, false)))
        .collect();
    all.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let mut body = String::new();
    if all.is_empty() {
        body.push_str(&empty(
            "No skills yet. The agent saves one after solving something worth repeating, or install some with hermes skills install.",
        ));
    } else {
        body.push_str(
            "<div class=\"table\"><table><tr><th>Skill</th><th>What it is for</th><th>Source</th><th>Uses</th><th>State</th><th></th></tr>",
        );
        for (s, on) in all {
            let uses = crate::skills::usage(&*shared.store, &s.name)
                .await
                .map(|u| u.count)
                .unwrap_or(0);
            let _ = write!(
                body,
                "<tr class=\"{}\"><td><a href=\"/skills/{}\">{}</a></td><td class=\"wrap\">{}</td><td>{}</td><td>{uses}</td><td>{}</td><td>{}</td></tr>",
                if on { "on" } else { "off" },
                esc(&s.name),
                esc(&s.name),
                esc(&s.description),
                source_of(s),
                if on { "on" } else { "off" },
                switch(&login, &s.name, on)
            );
        }
        body.push_str("</table></div>");
    }
    if !library.problems().is_empty() {
        body.push_str("<h2>Left out because of problems</h2><ul class=\"problems\">");
        for p in library.problems() {
            let _ = write!(body, "<li><code>{}</code></li>", esc(&p.to_string()));
        }
        body.push_str("</ul>");
    }
    body.push_str(
        "<p class=\"meta\">A skill turned off stays on disk; conversations started after the change no longer see it.</p>",
    );
    page("Skills", "/skills", &login, &body).into_response()
}

pub(crate) async fn view(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
    Path(name): Path<String>,
) -> Response {
    let library = library(&shared).await;
    let (skill, on) = match library.get(&name) {
        Some(s) => (s.clone(), true),
        None => match library.turned_off().iter().find(|s| s.name == name) {
            Some(s) => (s.clone(), false),
            None => {
                let body = empty("There is no such skill.");
                return (
                    StatusCode::NOT_FOUND,
                    page("Skill", "/skills", &login, &body),
                )
                    .into_response();
            }
        },
    };
    let m = &skill.manifest;
    let mut facts: Vec<(&str, String)> = vec![
        ("State", if on { "on" } else { "off" }.into()),
        ("Source", source_of(&skill).into()),
    ];
    if let Some(v) = &m.version {
        facts.push(("Version", esc(v)));
    }
    for (label, items) in [
        ("Tags", &skill.tags),
        ("Needs tools", &m.requires_tools),
        ("Needs toolsets", &m.requires_toolsets),
        ("Related", &m.related_skills),
    ] {
        if !items.is_empty() {
            facts.push((label, esc(&items.join(", "))));
        }
    }
    if !m.platforms.is_empty() {
        let p: Vec<String> = m.platforms.iter().map(ToString::to_string).collect();
        facts.push(("Platforms", esc(&p.join(", "))));
    }
    if let Ok(u) = crate::skills::usage(&*shared.store, &skill.name).await {
        let last = u
            .last_used
            .map(|t| format!(", last {}", time(t.as_millisecond())))
            .unwrap_or_default();
        facts.push(("Uses", format!("{}{last}", u.count)));
    }
    let mut body = format!("<p>{}</p><dl class=\"facts\">", esc(&skill.description));
    for (label, value) in facts {
        let _ = write!(body, "<dt>{label}</dt><dd>{value}</dd>");
    }
    body.push_str("</dl>");
    body.push_str(&switch(&login, &skill.name, on));
    let files = tokio::task::spawn_blocking({
        let skill = skill.clone();
        move || skill.files()
    })
    .await
    .unwrap_or_default();
    let _ = write!(
        body,
        "<h2>Instructions</h2><pre class=\"skill\">{}</pre>",
        esc(skill.body.trim())
    );
    if !files.is_empty() {
        body.push_str("<h2>Files</h2><ul>");
        for f in files {
            let _ = write!(
                body,
                "<li><code>{}</code> ({} bytes)</li>",
                esc(&f.path),
                f.bytes
            );
        }
        body.push_str("</ul>");
    }
    page(&skill.name, "/skills", &login, &body).into_response()
}

pub(crate) async fn act(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let Some(fields) = checked_form(&body, &login) else {
        return stale();
    };
    let enabled = match fields.get("do").map(String::as_str) {
        Some("enable") => true,
        Some("disable") => false,
        _ => return (StatusCode::BAD_REQUEST, "enable or disable\n").into_response(),
    };
    let library = library(&shared).await;
    if library.get(&name).is_none() && !library.turned_off().iter().any(|s| s.name == name) {
        return (StatusCode::NOT_FOUND, "no such skill\n").into_response();
    }
    let dir = SkillSources::for_home(&shared.config().home)
        .user_dir()
        .to_owned();
    let changed = {
        let name = name.clone();
        tokio::task::spawn_blocking(move || crate::skills::set_enabled(&dir, &name, enabled)).await
    };
    match changed {
        Ok(Ok(_)) => {
            tracing::info!(skill = %name, enabled, who = %login.who, "dashboard: skill switched");
            Redirect::to("/skills").into_response()
        }
        Ok(Err(e)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cannot write the list of skills turned off: {e}\n"),
        )
            .into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")).into_response(),
    }
}
