//! The systems under test, each started against a fresh pair of fakes (Telegram + LLM):
//! hermes (the release binary), the floor (a minimal echo gateway in this process, the least
//! work any gateway must do through the same fakes) and, with `--compare`, NousResearch's
//! hermes-agent (Python, started through `benches/hermes-agent/run.py`).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::daemon::{Daemon, TOKEN, World};
use crate::support::llm::Reply;

/// Which system answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Hermes,
    Floor,
    Agent,
}

impl Target {
    pub fn label(self) -> &'static str {
        match self {
            Target::Hermes => "hermes",
            Target::Floor => "floor",
            Target::Agent => "hermes-agent",
        }
    }
}

/// Settings of the hermes daemon under load: everyone allowed, messages of a busy
/// conversation queued (each answered), and concurrency caps raised from their defaults (256
/// turns, an adaptive number of model calls) so that they do not decide the result.
pub const HERMES_CONFIG: &str = "[gateway]\nallow_all_users = true\nbusy_mode = \"queue\"\n\
    max_concurrent_turns = 1024\n\n[llm]\nmax_concurrent_requests = 1024\n";

/// `--defaults`: everyone allowed, everything else as shipped.
pub const DEFAULT_CONFIG: &str = "[gateway]\nallow_all_users = true\n";

/// A running system under test; stopped when dropped.
pub enum Running {
    Hermes(Daemon),
    Floor(tokio::task::JoinHandle<()>),
    Agent(Child),
}

impl Running {
    /// Processes whose CPU and memory are the system's (none for the in-process floor;
    /// hermes-agent with any helper processes it started).
    pub fn pids(&self) -> Vec<i32> {
        match self {
            Running::Hermes(d) => vec![d.pid()],
            Running::Floor(_) => vec![],
            Running::Agent(c) => crate::load::process_tree(c.id() as i32),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        match self {
            Running::Hermes(d) => d.kill(),
            Running::Floor(h) => h.abort(),
            Running::Agent(c) => {
                // Its own process group (see spawn_agent): stop it with any helper it started.
                let group = -(c.id() as i32);
                // SAFETY: signalling the process group of our own child.
                unsafe {
                    libc::kill(group, libc::SIGTERM);
                }
                let deadline = Instant::now() + Duration::from_secs(5);
                while Instant::now() < deadline {
                    if c.try_wait().ok().flatten().is_some() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                // Whatever is left of the group (helpers, or a main process that hung).
                // SAFETY: as above.
                unsafe {
                    libc::kill(group, libc::SIGKILL);
                }
                let _ = c.wait();
            }
        }
    }
}

/// Fresh fakes with the LLM answering `echo: <text>` after `delay`; hermes configured with
/// [`HERMES_CONFIG`], or [`DEFAULT_CONFIG`] when `defaults`.
pub async fn world_with(delay: Duration, defaults: bool) -> World {
    let mut w = World::new(if defaults {
        DEFAULT_CONFIG
    } else {
        HERMES_CONFIG
    })
    .await;
    w.llm.set_default(move |r| {
        let reply = Reply::text(format!("echo: {}", r.last_user_text().unwrap_or_default()));
        if delay.is_zero() {
            reply
        } else {
            reply.delayed(delay)
        }
    });
    w.set_env("HERMES_LOG", "info");
    w.set_env("HERMES_ALLOW_ALL_USERS", "true");
    pass_env(&mut w);
    w
}

/// The daemon gets a clean environment; these pass through from the bench's, for A/B runs of
/// the allocator's settings.
pub fn pass_env(w: &mut World) {
    for key in [
        "MALLOC_ARENA_MAX",
        "MALLOC_TRIM_THRESHOLD_",
        "MIMALLOC_PURGE_DELAY",
        "MIMALLOC_ARENA_EAGER_COMMIT",
        "MIMALLOC_ARENA_RESERVE",
        "_RJEM_MALLOC_CONF",
    ] {
        if let Ok(v) = std::env::var(key) {
            w.set_env(key, &v);
        }
    }
}

/// [`world_with`] the raised caps.
pub async fn world(delay: Duration) -> World {
    world_with(delay, false).await
}

/// Start `target` against `w`'s fakes and wait until it polls Telegram.
pub async fn start(target: Target, w: &mut World, opts: &crate::Options) -> Running {
    match target {
        Target::Hermes => Running::Hermes(w.start().await),
        Target::Floor => {
            let polls = w.tg.calls_of("getupdates").len();
            let h = tokio::spawn(echo_gateway(w.tg.api_url(), w.llm.base_url()));
            while w.tg.calls_of("getupdates").len() <= polls {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Running::Floor(h)
        }
        Target::Agent => {
            let polls = w.tg.calls_of("getupdates").len();
            let child = spawn_agent(w, opts);
            let mut running = Running::Agent(child);
            let deadline = Instant::now() + Duration::from_secs(90);
            while w.tg.calls_of("getupdates").len() <= polls {
                if let Running::Agent(c) = &mut running
                    && let Ok(Some(status)) = c.try_wait()
                {
                    panic!(
                        "hermes-agent exited ({status}) before polling; log: {}",
                        agent_log(w).display()
                    );
                }
                assert!(
                    Instant::now() < deadline,
                    "hermes-agent never polled; log: {}",
                    agent_log(w).display()
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            running
        }
    }
}

/// The venv's python and the wrapper script (see `benches/hermes-agent/`).
fn agent_paths(opts: &crate::Options) -> (PathBuf, PathBuf) {
    let python = PathBuf::from(&opts.agent_venv).join("bin/python");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/hermes-agent/run.py");
    (python, script)
}

/// Whether hermes-agent is installed where `--agent-venv` points.
pub fn agent_available(opts: &crate::Options) -> bool {
    agent_paths(opts).0.exists()
}

/// hermes-agent's output of every start in this run, kept for a look after the run.
pub fn agent_log(_w: &World) -> PathBuf {
    crate::report::out_dir().join("hermes-agent.log")
}

fn spawn_agent(w: &World, opts: &crate::Options) -> Child {
    let (python, script) = agent_paths(opts);
    let home = w.home.path().join("agent-home");
    std::fs::create_dir_all(&home).expect("agent home");
    let path = agent_log(w);
    let _ = std::fs::create_dir_all(path.parent().expect("log directory"));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("agent log");
    Command::new(python)
        .arg(script)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("HERMES_HOME", &home)
        .env("BENCH_TELEGRAM_URL", w.tg.api_url())
        .env("BENCH_LLM_URL", w.llm.base_url())
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .env("OPENAI_API_KEY", "sk-test-key")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start hermes-agent")
}

/// The floor: a minimal gateway that long-polls the fake Telegram and answers each update
/// concurrently with one call to the fake LLM and one sendMessage. No storage, no sessions.
async fn echo_gateway(tg: String, llm: String) {
    let client = reqwest::Client::new();
    let api = format!("{tg}/bot{TOKEN}");
    let mut offset = 0i64;
    loop {
        let body = json!({"offset": offset, "timeout": 30});
        let Ok(resp) = client
            .post(format!("{api}/getUpdates"))
            .json(&body)
            .send()
            .await
        else {
            continue;
        };
        let Ok(v) = resp.json::<Value>().await else {
            continue;
        };
        for u in v["result"].as_array().into_iter().flatten() {
            offset = offset.max(u["update_id"].as_i64().unwrap_or(0) + 1);
            let chat = u["message"]["chat"]["id"].clone();
            let text = u["message"]["text"].as_str().unwrap_or("").to_owned();
            let (client, api, llm) = (client.clone(), api.clone(), llm.clone());
            tokio::spawn(async move {
                let req = json!({"model": "m", "messages": [{"role": "user", "content": text}]});
                let Ok(r) = client
                    .post(format!("{llm}/chat/completions"))
                    .json(&req)
                    .send()
                    .await
                else {
                    return;
                };
                let reply: Value = r.json().await.unwrap_or_default();
                let answer = reply["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                let _ = client
                    .post(format!("{api}/sendMessage"))
                    .json(&json!({"chat_id": chat, "text": answer}))
                    .send()
                    .await;
            });
        }
    }
}
