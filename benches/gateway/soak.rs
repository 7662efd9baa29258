//! `--soak MINUTES`: the release binary under a steady 50 messages a second for as long as asked,
//! with streamed answers (edited previews), tool calls and confirmations pressed from the chat,
//! sampling its resident memory and open file descriptors every 10 seconds. Writes the samples
//! (`target/bench/soak.csv`), a chart of both over time (`target/bench/soak.svg`, drawn with
//! plotters) and a summary (`target/bench/soak.json`): are they flat after the first five
//! minutes?
//!
//! Each of `USERS` people sends a message, waits for its answer, and sends the next at their
//! next slot (every `USERS / RATE` seconds). One message in five makes the model call a tool
//! (`session_search`), one in twenty a `terminal` command that needs a confirmation, which the
//! person allows.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use plotters::prelude::*;
use serde_json::{Value, json};

use crate::load::{quantile_ms, rss_kib};
use crate::support::Buttons;
use crate::support::daemon::World;
use crate::support::llm::{RecordedRequest, Reply};

const USERS: usize = 500;
/// Messages per second, all people together.
const RATE: f64 = 50.0;
const SAMPLE: Duration = Duration::from_secs(10);
/// Telegram ids of the people.
const BASE: i64 = 700_000;
/// Where "flat" is judged from.
const WARMUP_MIN: f64 = 5.0;

const CONFIG: &str = "[gateway]\nallow_all_users = true\n\n[llm]\nstreaming = true\n";

/// One sample.
#[derive(Clone, Copy, Debug)]
struct Sample {
    minute: f64,
    rss_mib: f64,
    fds: usize,
    answered: usize,
}

/// What the person sends as message `k`: its kind decides what the model does.
fn text(u: usize, k: usize) -> String {
    let kind = if k % 20 == 19 {
        "confirm"
    } else if k % 5 == 4 {
        "tool"
    } else {
        "chat"
    };
    format!("soak {kind} <{u}:{k}>")
}

/// The `<u:k>` token of a text.
fn token(text: &str) -> Option<(usize, usize)> {
    let start = text.rfind('<')?;
    let end = start + text[start..].find('>')?;
    let (u, k) = text[start + 1..end].split_once(':')?;
    Some((u.parse().ok()?, k.parse().ok()?))
}

/// The fake model: a streamed answer ending with the message's token (so only the finished
/// answer carries it), after a tool call for "tool" and "confirm" messages.
fn respond(r: &RecordedRequest) -> Reply {
    let user = r.last_user_text().unwrap_or_default();
    let tok = token(&user).map_or("<?>".to_owned(), |(u, k)| format!("<{u}:{k}>"));
    // A tool's result is the last message when the model is called after the tool ran.
    let after_tool = r.messages().last().is_some_and(|m| m["role"] == "tool");
    if !after_tool {
        if user.contains("soak tool") {
            return Reply::tool_call("session_search", json!({"query": "soak"}));
        }
        if user.contains("soak confirm") {
            // Arithmetic expansion: not a plain read-only command, so it asks first.
            return Reply::tool_call("terminal", json!({"command": "echo confirmed-$((40 + 2))"}));
        }
    }
    let filler = "All right, here is what I found after looking into it. ".repeat(6);
    Reply::text(format!("{filler}done {tok}")).chunk_delay(Duration::from_millis(80))
}

fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Run the soak for `minutes`; prints and writes the summary.
pub async fn run(minutes: f64) -> Value {
    let mut w = World::new(CONFIG).await;
    w.set_env("HERMES_ALLOW_ALL_USERS", "true");
    w.set_env("HERMES_LOG", "warn");
    w.llm.keep_requests(100);
    w.llm.set_default(respond);
    let daemon = w.start().await;
    let pid = daemon.pid();
    let period = Duration::from_secs_f64(USERS as f64 / RATE);
    let started = Instant::now();
    let end = started + Duration::from_secs_f64(minutes * 60.0);
    // Per person: the message waiting for its answer (number, sent at), and when the next is due.
    let mut waiting: Vec<Option<(usize, Instant)>> = vec![None; USERS];
    let mut next_k = vec![0usize; USERS];
    let mut due: Vec<Instant> = (0..USERS)
        .map(|u| started + period.mul_f64(u as f64 / USERS as f64))
        .collect();
    let (mut sent_cursor, mut edit_cursor) = (0, 0);
    let mut latencies = Vec::new();
    let mut answered = 0usize;
    let mut confirmed = 0usize;
    let mut samples = Vec::new();
    let mut next_sample = started;
    let mut pressed: HashMap<(i64, i64), ()> = HashMap::new();
    while Instant::now() < end {
        let now = Instant::now();
        for u in 0..USERS {
            if waiting[u].is_none() && due[u] <= now {
                let k = next_k[u];
                w.tg.private_text(BASE + u as i64, "Soak", &text(u, k));
                waiting[u] = Some((k, now));
                next_k[u] += 1;
                due[u] += period;
            }
        }
        let sent = w.tg.sent_since(sent_cursor);
        sent_cursor += sent.len();
        let edits = w.tg.edits_since(edit_cursor);
        edit_cursor += edits.len();
        for m in sent.iter().chain(edits.iter()) {
            let u = (m.chat_id - BASE) as usize;
            if u >= USERS {
                continue;
            }
            if m.visible_text.contains("Permission needed")
                && !m.buttons().is_empty()
                && pressed.insert((m.chat_id, m.message_id), ()).is_none()
            {
                w.tg.callback_query(m.chat_id, m.chat_id, m.message_id, &m.button("Allow once"));
                confirmed += 1;
                continue;
            }
            if let (Some((k, at)), Some((tu, tk))) = (waiting[u], token(&m.visible_text))
                && tu == u
                && tk == k
                && m.visible_text.contains("done")
            {
                latencies.push(m.at.saturating_duration_since(at));
                answered += 1;
                waiting[u] = None;
            }
        }
        if now >= next_sample {
            let s = Sample {
                minute: started.elapsed().as_secs_f64() / 60.0,
                rss_mib: rss_kib(pid) as f64 / 1024.0,
                fds: open_fds(pid),
                answered,
            };
            eprintln!(
                "[soak] {:>5.1} min: RSS {:.1} MiB, {} fds, {} answered, {} confirmations",
                s.minute, s.rss_mib, s.fds, s.answered, confirmed
            );
            samples.push(s);
            next_sample += SAMPLE;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stranded = waiting.iter().filter(|w| w.is_some()).count();
    drop(daemon);
    let summary = summarize(&samples, minutes, answered, stranded, confirmed, &latencies);
    write(&samples, &summary);
    summary
}

/// Least-squares slope of `y` over `x`, per unit of `x`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let cov: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let var: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if var == 0.0 { 0.0 } else { cov / var }
}

fn summarize(
    samples: &[Sample],
    minutes: f64,
    answered: usize,
    stranded: usize,
    confirmed: usize,
    latencies: &[Duration],
) -> Value {
    let after: Vec<&Sample> = samples.iter().filter(|s| s.minute >= WARMUP_MIN).collect();
    let rss: Vec<(f64, f64)> = after.iter().map(|s| (s.minute, s.rss_mib)).collect();
    let fds: Vec<(f64, f64)> = after.iter().map(|s| (s.minute, s.fds as f64)).collect();
    let range = |v: &[(f64, f64)]| {
        let lo = v.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let hi = v.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        json!([lo, hi])
    };
    json!({
        "minutes": minutes,
        "rate_per_s": RATE,
        "users": USERS,
        "answered": answered,
        "stranded_at_end": stranded,
        "confirmations": confirmed,
        "latency_p50_ms": quantile_ms(latencies, 0.5),
        "latency_p99_ms": quantile_ms(latencies, 0.99),
        "after_warmup": {
            "rss_mib_range": range(&rss),
            "rss_mib_per_hour": slope(&rss) * 60.0,
            "fds_range": range(&fds),
            "fds_per_hour": slope(&fds) * 60.0,
        },
        "samples": samples.len(),
    })
}

fn write(samples: &[Sample], summary: &Value) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    let _ = std::fs::create_dir_all(&dir);
    let mut csv = String::from("minute,rss_mib,fds,answered\n");
    for s in samples {
        csv.push_str(&format!(
            "{:.3},{:.2},{},{}\n",
            s.minute, s.rss_mib, s.fds, s.answered
        ));
    }
    let _ = std::fs::write(dir.join("soak.csv"), csv);
    let _ = std::fs::write(
        dir.join("soak.json"),
        serde_json::to_string_pretty(summary).unwrap_or_default(),
    );
    let svg = dir.join("soak.svg");
    if let Err(e) = chart(samples, &svg) {
        eprintln!("[soak] cannot draw {}: {e}", svg.display());
    }
    eprintln!(
        "[soak] {}\n[soak] wrote {}/soak.{{csv,json,svg}}",
        serde_json::to_string_pretty(summary).unwrap_or_default(),
        dir.display()
    );
}

/// Two panels over time: resident memory (MiB) and open file descriptors.
fn chart(samples: &[Sample], path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(300);
    let end = samples.last().map_or(1.0, |s| s.minute).max(1.0);
    let max_rss = samples.iter().map(|s| s.rss_mib).fold(1.0, f64::max) * 1.2;
    let max_fds = samples.iter().map(|s| s.fds as f64).fold(1.0, f64::max) * 1.2;
    let panels = [
        (&top, "resident memory (MiB)", max_rss, true),
        (&bottom, "open file descriptors", max_fds, false),
    ];
    for (area, title, max, rss) in panels {
        let mut c = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..end, 0.0..max)?;
        c.configure_mesh().x_desc("minutes").draw()?;
        c.draw_series(LineSeries::new(
            samples
                .iter()
                .map(|s| (s.minute, if rss { s.rss_mib } else { s.fds as f64 })),
            &BLUE,
        ))?;
    }
    root.present()?;
    Ok(())
}
