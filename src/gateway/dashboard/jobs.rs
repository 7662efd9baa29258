//! The dashboard's scheduled jobs: each job with its schedule, next run, targets and last runs;
//! pause, resume and run now (the scheduler starts a job made due within seconds).

use std::fmt::Write;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use super::html::{csrf_field, empty, esc, page, time};
use super::{Login, checked_form, stale};
use crate::cron::jobs::{run_now, set_enabled};
use crate::gateway::Shared;

/// Runs shown per job.
const RUNS: usize = 3;

pub(crate) async fn list(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
) -> Response {
    let jobs = match shared.store.cron_list(None).await {
        Ok(j) => j,
        Err(e) => {
            let body = empty(&format!("The store did not answer: {e}"));
            return page("Scheduled jobs", "/jobs", &login, &body).into_response();
        }
    };
    let mut body = String::new();
    if jobs.is_empty() {
        body.push_str(&empty(
            "No scheduled jobs. Ask the agent in a chat (\"every weekday at 8 send me the news\") or use hermes cron add.",
        ));
    }
    for j in &jobs {
        let state = match (j.enabled, j.next_run_at) {
            (false, _) => "paused".to_owned(),
            (true, None) => "done".to_owned(),
            (true, Some(at)) => format!("next {}", time(at)),
        };
        let _ = write!(
            body,
            "<article class=\"job\"><h3>#{} {}</h3><p class=\"meta\">{} ({}) · {} · to {}</p><pre>{}</pre>",
            j.id,
            esc(&j.name),
            esc(&j.schedule),
            esc(&j.timezone),
            state,
            esc(&j.deliver.join(", ")),
            esc(&j.prompt)
        );
        if let Ok(runs) = shared.store.cron_runs(j.id, RUNS).await
            && !runs.is_empty()
        {
            body.push_str("<ul class=\"runs\">");
            for r in runs {
                let _ = write!(
                    body,
                    "<li>{} · {}{}</li>",
                    time(r.started_at),
                    esc(&r.status),
                    r.output
                        .as_deref()
                        .map(|o| format!(" · {}", esc(&o.chars().take(160).collect::<String>())))
                        .unwrap_or_default()
                );
            }
            body.push_str("</ul>");
        }
        let toggle = if j.enabled {
            "<button name=\"do\" value=\"pause\">Pause</button>"
        } else {
            "<button name=\"do\" value=\"resume\">Resume</button>"
        };
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/jobs/{}\">{}{toggle}\
             <button name=\"do\" value=\"run\" class=\"allow\">Run now</button></form></article>",
            j.id,
            csrf_field(&login)
        );
    }
    page("Scheduled jobs", "/jobs", &login, &body).into_response()
}

pub(crate) async fn act(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
    Path(id): Path<i64>,
    body: Bytes,
) -> Response {
    let Some(fields) = checked_form(&body, &login) else {
        return stale();
    };
    let Ok(Some(mut job)) = shared.store.cron_get(id).await else {
        return (StatusCode::NOT_FOUND, "no such job\n").into_response();
    };
    let now = hermes_adapter::now_millis();
    let done = match fields.get("do").map(String::as_str) {
        Some("pause") => set_enabled(&mut job, false, now).map_err(|e| e.to_string()),
        Some("resume") => set_enabled(&mut job, true, now).map_err(|e| e.to_string()),
        Some("run") => {
            run_now(&mut job, now);
            Ok(())
        }
        _ => return (StatusCode::BAD_REQUEST, "pause, resume or run\n").into_response(),
    };
    if let Err(e) = done {
        return (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response();
    }
    if let Err(e) = shared.store.cron_update(job).await {
        return (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")).into_response();
    }
    tracing::info!(job = id, action = ?fields.get("do"), who = %login.who, "dashboard: job changed");
    Redirect::to("/jobs").into_response()
}
