//! Several `hermes gateway` processes on one PostgreSQL store, through the real binary, a real
//! PostgreSQL and the fake Telegram (long polling): one process receives under a lease while the
//! others stand by, every process routes and answers, and nothing is lost or doubled when
//! processes are killed, paused past their lease, or when PostgreSQL restarts. Discord's gateway
//! shards spread over the processes (the fake Discord routes each server to its shard).

#![cfg(feature = "postgres")]

use crate::support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;
use support::Buttons;
use support::daemon::{Daemon, World};
use support::llm::Reply;

/// The model's answer time: two turns of one session can never be closer than this.
const MODEL_DELAY: Duration = Duration::from_millis(30);
const FIRST_USER: i64 = 5000;

/// A world of `users` allowed Telegram users whose daemons share the database at `url`, with
/// a 3-second takeover, one message per turn, and a model that answers "re <text>".
async fn world(users: i64, url: &str) -> World {
    let mut w = World::new(
        "[leases]\ntakeover_secs = 3\n\
         [gateway]\nbusy_mode = \"queue\"\nmessages_per_minute = 100000\n",
    )
    .await;
    let allowed: Vec<String> = (FIRST_USER..FIRST_USER + users)
        .map(|u| u.to_string())
        .collect();
    w.set_env("TELEGRAM_ALLOWED_USERS", &allowed.join(","));
    w.set_env("HERMES_DATABASE_URL", url);
    w.llm.keep_requests(100_000);
    w.llm.set_default(|req| {
        let said = req.last_user_text().unwrap_or_default();
        Reply::text(format!("re {}", said.trim())).delayed(MODEL_DELAY)
    });
    w
}

/// Start one more gateway process and wait until it joined the deployment.
async fn join(w: &mut World) -> Daemon {
    let d = w.spawn(&["gateway"]);
    d.wait_log("joined the deployment", 1, support::WAIT).await;
    d
}

/// The process id of the current holder of `lease`, if any.
async fn holder(db: &tokio_postgres::Client, lease: &str) -> Option<(String, i32)> {
    let row = db
        .query_opt(
            "SELECT l.holder FROM leases l JOIN processes p ON p.id = l.holder
              WHERE l.name = $1 AND p.expires_at > hermes_now()",
            &[&lease],
        )
        .await
        .unwrap()?;
    let id: String = row.get(0);
    let pid = id.split(':').nth(1)?.parse().ok()?;
    Some((id, pid))
}

/// Wait until some live process holds the Telegram receiving lease.
async fn receiver(db: &tokio_postgres::Client) -> (String, i32) {
    let deadline = Instant::now() + support::WAIT;
    loop {
        if let Some(h) = holder(db, "receive:telegram").await {
            return h;
        }
        assert!(Instant::now() < deadline, "nobody took the Telegram lease");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Replies sent so far, per message text they answer ("re <text>").
fn replies(w: &World) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for m in w.tg.sent() {
        if let Some(text) = m.text.strip_prefix("re ") {
            *out.entry(text.to_owned()).or_default() += 1;
        }
    }
    out
}

/// Replies this process had claimed and not recorded as sent when it died: sends that may have
/// reached the platform already (the only replies a takeover may rightly send again).
async fn in_flight(db: &tokio_postgres::Client, process: &str) -> usize {
    db.query_one(
        "SELECT COUNT(*) FROM outbox WHERE status = 'pending' AND claimed_by = $1",
        &[&process],
    )
    .await
    .unwrap()
    .get::<_, i64>(0) as usize
}

async fn wait_replies(w: &World, n: usize, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while replies(w).len() < n {
        assert!(
            Instant::now() < deadline,
            "{} of {n} messages answered; logs:\n{}",
            replies(w).len(),
            tail(&w.logs(), 6000)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..s.len())
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(s.len());
    &s[start..]
}

/// Per session (user), the model calls' start times in order: two turns of one session at once
/// would put two calls closer than the model's answer time.
fn assert_turns_never_overlap(w: &World) {
    let mut by_user: HashMap<String, Vec<Instant>> = HashMap::new();
    for req in w.llm.requests() {
        let Some(said) = req.last_user_text() else {
            continue;
        };
        let Some(user) = said.split_whitespace().next() else {
            continue;
        };
        if user.starts_with('u') {
            by_user.entry(user.to_owned()).or_default().push(req.at);
        }
    }
    for (user, mut at) in by_user {
        at.sort();
        for pair in at.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(
                gap >= MODEL_DELAY,
                "two turns of session {user} ran at once (model calls {gap:?} apart)"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_processes_answer_1000_messages_once_while_the_receiver_is_killed_twice() {
    const USERS: i64 = 100;
    const PER_USER: i64 = 10;
    const TOTAL: usize = (USERS * PER_USER) as usize;
    let url = support::postgres::fresh_database().await;
    let db = support::postgres::connect(&url).await;
    let mut w = world(USERS, &url).await;
    let mut daemons = vec![join(&mut w).await, join(&mut w).await, join(&mut w).await];
    receiver(&db).await;
    let started = Instant::now();
    for n in 0..PER_USER {
        for u in FIRST_USER..FIRST_USER + USERS {
            w.tg.private_text(u, "Member", &format!("u{u} m{n}"));
        }
    }

    // Kill the receiver at a quarter and at a half of the answers, another process at three
    // quarters; the first two are replaced, so that three run most of the time.
    let mut may_double = 0;
    for (at, receiver_dies) in [(TOTAL / 4, true), (TOTAL / 2, true), (TOTAL * 3 / 4, false)] {
        wait_replies(&w, at, Duration::from_secs(120)).await;
        let (rid, rpid) = receiver(&db).await;
        let victim = if receiver_dies {
            daemons.iter().position(|d| d.pid() == rpid)
        } else {
            daemons.iter().position(|d| d.pid() != rpid)
        }
        .expect("the victim is one of ours");
        let pid = daemons[victim].pid();
        daemons[victim].kill();
        let id = if receiver_dies {
            rid
        } else {
            let row = db
                .query_one(
                    "SELECT id FROM processes WHERE id LIKE '%:' || $1 || ':%'",
                    &[&pid.to_string()],
                )
                .await
                .unwrap();
            row.get(0)
        };
        may_double += in_flight(&db, &id).await;
        daemons.remove(victim);
        if receiver_dies {
            daemons.push(join(&mut w).await);
        }
    }
    wait_replies(&w, TOTAL, Duration::from_secs(180)).await;
    let elapsed = started.elapsed();
    // Sends that could still be under way settle before counting.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let got = replies(&w);
    for n in 0..PER_USER {
        for u in FIRST_USER..FIRST_USER + USERS {
            assert!(
                got.contains_key(&format!("u{u} m{n}")),
                "u{u} m{n} unanswered"
            );
        }
    }
    let doubled: usize = got.values().map(|n| n - 1).sum();
    println!(
        "{TOTAL} messages answered in {elapsed:?} with 3 kills; {doubled} doubled, {may_double} sends were in flight at the kills"
    );
    assert!(
        doubled <= may_double,
        "{doubled} replies doubled, only {may_double} sends were in flight at the kills"
    );
    assert_turns_never_overlap(&w);
    // Every message went through the inbox once and is finished.
    let open: i64 = db
        .query_one(
            "SELECT COUNT(*) FROM inbox WHERE status IN ('new', 'queued')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(open, 0);
    let stored: i64 = db
        .query_one("SELECT COUNT(*) FROM inbox", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored as usize, TOTAL, "each update stored once");
}

/// Throughput with 1, 2 and 3 processes on this machine (a measurement, not a check: run with
/// `cargo nextest run -E 'test(/^scale_out::/)' --run-ignored only --no-capture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn throughput_with_one_two_and_three_processes() {
    const USERS: i64 = 100;
    const PER_USER: i64 = 10;
    const TOTAL: usize = (USERS * PER_USER) as usize;
    let counts: Vec<usize> = std::env::var("HERMES_SCALE_PROCESSES")
        .unwrap_or_else(|_| "1,2,3".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    for processes in counts {
        let url = support::postgres::fresh_database().await;
        let db = support::postgres::connect(&url).await;
        let mut w = world(USERS, &url).await;
        let mut daemons = Vec::new();
        for _ in 0..processes {
            daemons.push(join(&mut w).await);
        }
        receiver(&db).await;
        let started = Instant::now();
        for n in 0..PER_USER {
            for u in FIRST_USER..FIRST_USER + USERS {
                w.tg.private_text(u, "Member", &format!("u{u} m{n}"));
            }
        }
        wait_replies(&w, TOTAL, Duration::from_secs(600)).await;
        let elapsed = started.elapsed();
        println!(
            "{processes} process(es): {TOTAL} messages in {:.1} s = {:.0} messages/s",
            elapsed.as_secs_f64(),
            TOTAL as f64 / elapsed.as_secs_f64()
        );
        if let Ok(dir) = std::env::var("HERMES_SCALE_KEEP_LOGS") {
            std::fs::write(format!("{dir}/scale-{processes}.log"), w.logs()).unwrap();
        }
        drop(daemons);
    }
}

/// Two processes in Telegram webhook mode behind nginx (round-robin), Telegram pushing the
/// queue over many connections at once: every update is answered once, whichever process
/// received it, and a request with a wrong secret is refused by whichever process gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_webhook_processes_behind_nginx_answer_every_update_once() {
    const USERS: i64 = 20;
    const PER_USER: i64 = 10;
    const TOTAL: usize = (USERS * PER_USER) as usize;
    const SECRET: &str = "shared-by-the-Processes_1";
    let url = support::postgres::fresh_database().await;
    let db = support::postgres::connect(&url).await;
    let mut w = world(USERS, &url).await;
    let ports = [support::http::free_port(), support::http::free_port()];
    let lb = support::nginx::Balancer::start(&ports.map(|p| format!("127.0.0.1:{p}")));
    w.set_env("TELEGRAM_MODE", "webhook");
    w.set_env("TELEGRAM_WEBHOOK_URL", &format!("{}/telegram", lb.url));
    w.set_env("TELEGRAM_WEBHOOK_SECRET", SECRET);
    let mut daemons = Vec::new();
    for port in ports {
        w.set_env("TELEGRAM_WEBHOOK_LISTEN", &format!("127.0.0.1:{port}"));
        daemons.push(join(&mut w).await);
    }
    for d in &daemons {
        d.wait_log("Telegram connected (webhook)", 1, support::WAIT)
            .await;
    }
    let hook = w.tg.webhook().expect("registered");
    assert_eq!(hook.url, format!("{}/telegram", lb.url));
    assert_eq!(hook.secret_token.as_deref(), Some(SECRET));
    assert!(
        holder(&db, "receive:telegram").await.is_none(),
        "pushed updates need no receiving lease"
    );

    for n in 0..PER_USER {
        for u in FIRST_USER..FIRST_USER + USERS {
            w.tg.private_text(u, "Member", &format!("u{u} m{n}"));
        }
    }
    // Telegram's default: up to 40 connections at once.
    let posts = w.tg.deliver_pending(40, Duration::from_secs(60)).await;
    wait_replies(&w, TOTAL, Duration::from_secs(120)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let got = replies(&w);
    let doubled: Vec<_> = got.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "answered twice: {doubled:?}");
    assert_eq!(got.len(), TOTAL);
    assert_turns_never_overlap(&w);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM inbox").await, TOTAL as i64);

    // Round-robin: each process took a fair share of the updates.
    for port in ports {
        let ok = lb.count(Some(&format!("127.0.0.1:{port}")), 200);
        assert!(
            ok >= TOTAL / 4,
            "process on port {port} took {ok} of {posts} POSTs: {:?}",
            lb.answered()
        );
    }

    // A forged request is refused with 401 by either process (two in a row: one each).
    let forged = w.tg.private_text(FIRST_USER, "Member", "u5000 forged");
    let body = w.tg.update_json(forged.update_id).to_string();
    for _ in 0..2 {
        assert_eq!(
            w.tg.post_raw(body.clone(), Some("shared-by-the-Processes_2"))
                .await,
            401
        );
    }
    // nginx writes a request's log line as it finishes it.
    let deadline = Instant::now() + support::WAIT;
    while lb.count(None, 401) < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for port in ports {
        let n = lb.count(Some(&format!("127.0.0.1:{port}")), 401);
        assert_eq!(n, 1, "port {port}: {:?}", lb.answered());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(replies(&w).len(), TOTAL, "nothing forged was answered");

    // `hermes status` (answered by the last process started, whose address is in the home they
    // share) shows the whole deployment; a stopped process shows as gone and leaves the other's
    // address in place.
    let (_, out, err) = w.run(&["status"]);
    assert!(
        out.contains("deployment: 2 live process(es) on the shared store"),
        "{out}{err}"
    );
    assert_eq!(out.matches(" (this): live, beat ").count(), 1, "{out}");
    let stopped = daemons.remove(0).terminate(support::WAIT);
    assert!(stopped.success());
    let (_, out, err) = w.run(&["status"]);
    assert!(out.contains("deployment: 1 live process(es)"), "{out}{err}");
    assert_eq!(out.matches(": GONE, beat ").count(), 1, "{out}");
}

/// Two processes on one database: every user's turn asks to confirm a command, and each press
/// reaches the turn waiting for it, whichever process's router claimed the press (a process
/// hands a session's messages to the process running its turn).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn confirmations_reach_the_waiting_turn_whichever_process_routes_the_press() {
    const USERS: i64 = 12;
    let url = support::postgres::fresh_database().await;
    let db = support::postgres::connect(&url).await;
    let mut w = world(USERS, &url).await;
    w.llm.set_default(|req| {
        if let Some((_, out)) = req.tool_results().last() {
            return Reply::text(format!("done {}", out.trim()));
        }
        let said = req.last_user_text().unwrap_or_default();
        let user = said
            .split_whitespace()
            .next()
            .unwrap_or("nobody")
            .to_owned();
        Reply::tool_call("terminal", json!({"command": format!("echo ran-{user}")}))
    });
    let _daemons = [join(&mut w).await, join(&mut w).await];
    receiver(&db).await;
    for u in FIRST_USER..FIRST_USER + USERS {
        w.tg.private_text(u, "Member", &format!("u{u} run it"));
    }
    let asked = |w: &World| {
        w.tg.sent()
            .into_iter()
            .filter(|m| m.visible_text.contains("Permission needed: terminal"))
            .collect::<Vec<_>>()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while asked(&w).len() < USERS as usize {
        assert!(Instant::now() < deadline, "{} asked", asked(&w).len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for request in asked(&w) {
        let user = request.chat_id;
        w.tg.callback_query(
            user,
            user,
            request.message_id,
            &request.button("Allow once"),
        );
    }
    let done = |w: &World| {
        w.tg.sent()
            .into_iter()
            .filter(|m| m.visible_text.starts_with("done "))
            .map(|m| (m.chat_id, m.visible_text))
            .collect::<Vec<_>>()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while done(&w).len() < USERS as usize {
        assert!(
            Instant::now() < deadline,
            "{} of {USERS} confirmed calls ran: {:?}",
            done(&w).len(),
            support::telegram::visible(&w.tg.sent())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (user, text) in done(&w) {
        assert!(text.contains(&format!("ran-u{user}")), "{user}: {text}");
    }
    // Which router claims a press is a race: 5 to 7 of the 12 were handed over in three runs.
    let handed = w.logged("handed to the process running the session");
    println!("{handed} press(es) handed to the process running the session");
    assert!(
        handed > 0,
        "no press crossed processes: the test showed nothing"
    );
}

/// A `/stop` stops the running turn of its session whichever process routes it (the router
/// hands it to the process running the turn): 24 people's long answers are all stopped at once,
/// none is sent, and some of the stops crossed processes (7 to 13 of 24 in three runs; which
/// router claims a stop is a race, so the count varies).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stop_reaches_the_running_turn_whichever_process_routes_it() {
    const USERS: i64 = 24;
    let url = support::postgres::fresh_database().await;
    let db = support::postgres::connect(&url).await;
    let mut w = world(USERS, &url).await;
    w.llm.set_default(|req| {
        let said = req.last_user_text().unwrap_or_default();
        Reply::text(format!("re {}", said.trim())).delayed(Duration::from_secs(120))
    });
    let _daemons = [join(&mut w).await, join(&mut w).await];
    receiver(&db).await;
    for u in FIRST_USER..FIRST_USER + USERS {
        w.tg.private_text(u, "Member", &format!("u{u} a long question"));
    }
    // Every turn is waiting for the model (one request per person).
    w.llm
        .wait_requests(USERS as usize, Duration::from_secs(60))
        .await;
    let started = Instant::now();
    for u in FIRST_USER..FIRST_USER + USERS {
        w.tg.private_text(u, "Member", "/stop");
    }
    let stopped = |w: &World| {
        w.tg.sent()
            .into_iter()
            .filter(|m| m.visible_text.starts_with("⏹ Stopped."))
            .map(|m| m.chat_id)
            .collect::<std::collections::HashSet<_>>()
    };
    support::wait_for(
        Duration::from_secs(30),
        "every turn stopped",
        || (stopped(&w).len() == USERS as usize).then_some(()),
        || format!("{:?}", support::telegram::visible(&w.tg.sent())),
    )
    .await;
    println!("{USERS} turns stopped in {:?}", started.elapsed());
    assert!(
        replies(&w).is_empty(),
        "a stopped turn answered: {:?}",
        replies(&w)
    );
    let handed = w.logged("handed to the process running the session");
    println!("{handed} stop(s) handed to the process running the session");
    assert!(
        handed > 0,
        "no stop crossed processes: the test showed nothing"
    );
}

/// The process (of `daemons`) whose registration id is `id`.
fn by_id(daemons: &mut [Daemon], id: &str) -> usize {
    let pid: i32 = id.split(':').nth(1).and_then(|p| p.parse().ok()).unwrap();
    daemons
        .iter()
        .position(|d| d.pid() == pid)
        .expect("one of ours")
}

async fn count(db: &tokio_postgres::Client, sql: &str) -> i64 {
    db.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_process_paused_past_its_lease_writes_nothing_stale_when_it_resumes() {
    let url = support::postgres::fresh_database().await;
    let db = support::postgres::connect(&url).await;
    let mut w = world(2, &url).await;
    let mut daemons = vec![join(&mut w).await, join(&mut w).await];
    receiver(&db).await;
    // The first model call hangs until the gate opens; any later one answers at once.
    let gate = support::llm::Gate::new();
    w.llm
        .push(Reply::text("stale answer from the paused process").after(gate.clone()));
    w.tg.private_text(FIRST_USER, "Member", "u5000 m0");
    let deadline = Instant::now() + support::WAIT;
    while w.llm.in_flight() == 0 {
        assert!(
            Instant::now() < deadline,
            "the turn never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (holder_id, _) = holder(&db, "session:telegram:5000")
        .await
        .expect("the running turn's process holds the session");
    let first_token: i64 = count(
        &db,
        "SELECT token FROM leases WHERE name = 'session:telegram:5000'",
    )
    .await;
    let paused = by_id(&mut daemons, &holder_id);
    daemons[paused].signal(libc::SIGSTOP);

    // The other process takes the session over once the paused one stops beating, and answers.
    wait_replies(&w, 1, Duration::from_secs(30)).await;
    let token: i64 = count(
        &db,
        "SELECT token FROM leases WHERE name = 'session:telegram:5000'",
    )
    .await;
    assert!(
        token > first_token,
        "the lease changed hands: {first_token} -> {token}"
    );

    // The paused process resumes with its model answer ready: its turn's commit is refused.
    gate.open();
    daemons[paused].signal(libc::SIGCONT);
    daemons[paused]
        .wait_log("taken over by another process", 1, support::WAIT)
        .await;
    // It is alive, beating again, and the deployment goes on: a next message is answered once.
    w.tg.private_text(FIRST_USER, "Member", "u5000 m1");
    wait_replies(&w, 2, support::WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let sent: Vec<String> = w.tg.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(
        sent,
        ["re u5000 m0", "re u5000 m1"],
        "nothing stale was sent"
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM messages WHERE content LIKE '%stale answer%'"
        )
        .await,
        0,
        "nothing stale was stored"
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM messages WHERE role = 'user'").await,
        2,
        "each message once in the history"
    );
    assert_eq!(count(&db, "SELECT COUNT(*) FROM turns").await, 2);
    assert!(daemons[paused].log().contains("missed its heartbeat"));
}

/// PostgreSQL stops (fast shutdown: every connection cut) and starts again mid-run: a write that
/// failed meanwhile is tried again (a message not yet routed, a session lease not yet given
/// back), so every message is answered, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn processes_ride_out_a_postgresql_restart_and_lose_nothing() {
    const USERS: i64 = 10;
    let port = 20_000 + (std::process::id() % 10_000) as u16;
    let server = support::postgres::PrivateServer::start(port);
    let db = support::postgres::connect(&server.url).await;
    let mut w = world(USERS, &server.url).await;
    let _daemons = [join(&mut w).await, join(&mut w).await];
    receiver(&db).await;
    let send_round = |n: i64| {
        for u in FIRST_USER..FIRST_USER + USERS {
            w.tg.private_text(u, "Member", &format!("u{u} m{n}"));
        }
    };
    for n in 0..3 {
        send_round(n);
    }
    wait_replies(&w, 20, Duration::from_secs(60)).await;
    drop(db);
    // A fast shutdown cuts every connection (pools, listeners); the server is back in a moment.
    server.restart();
    for n in 3..6 {
        send_round(n);
    }
    wait_replies(&w, (USERS * 6) as usize, Duration::from_secs(120)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = replies(&w);
    let doubled: Vec<_> = got.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "answered twice: {doubled:?}");
    let db = support::postgres::connect(&server.url).await;
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM inbox WHERE status IN ('new', 'queued')"
        )
        .await,
        0
    );
    assert_eq!(count(&db, "SELECT COUNT(*) FROM inbox").await, USERS * 6);
}

/// Who holds each Discord shard's receiving lease (live holders only), by shard.
async fn shard_holders(db: &tokio_postgres::Client, shards: u16) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for i in 0..shards {
        out.push(
            holder(db, &format!("receive:discord {i}/{shards}"))
                .await
                .map(|h| h.0),
        );
    }
    out
}

/// Wait until every shard is held and connected, spread as evenly as `processes` allow.
async fn wait_spread(
    db: &tokio_postgres::Client,
    dc: &support::discord::FakeDiscord,
    w: &World,
    processes: usize,
) -> Vec<String> {
    let deadline = Instant::now() + support::WAIT;
    loop {
        let held = shard_holders(db, 4).await;
        let mut per: HashMap<&String, usize> = HashMap::new();
        for h in held.iter().flatten() {
            *per.entry(h).or_default() += 1;
        }
        let even = per.len() == processes && per.values().all(|n| *n == 4 / processes);
        if held.iter().all(Option::is_some) && even && dc.shards_connected().iter().all(|c| *c) {
            return held.into_iter().flatten().collect();
        }
        assert!(
            Instant::now() < deadline,
            "shards not spread over {processes} process(es): {held:?}, connected {:?}; logs:\n{}",
            dc.shards_connected(),
            tail(&w.logs(), 6000)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Discord replies sent so far, per message text they answer ("re <text>").
fn discord_answers(dc: &support::discord::FakeDiscord) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for m in dc.sent() {
        if let Some(said) = m.content.strip_prefix("re ") {
            *out.entry(said.to_owned()).or_default() += 1;
        }
    }
    out
}

async fn wait_discord_answers(dc: &support::discord::FakeDiscord, w: &World, n: usize) {
    support::wait_for(
        support::WAIT,
        &format!("{n} Discord messages answered"),
        || (discord_answers(dc).len() >= n).then_some(()),
        || {
            format!(
                "{:?}; logs:\n{}",
                discord_answers(dc),
                tail(&w.logs(), 6000)
            )
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn discord_shards_spread_over_the_processes_and_move_when_one_dies() {
    use support::discord::ALICE;
    let url = support::postgres::fresh_database().await;
    let db = support::postgres::connect(&url).await;
    let (mut w, dc) =
        support::discord::world("[leases]\ntakeover_secs = 3\n[discord]\nshards = 4\n").await;
    dc.set_shards(4);
    w.set_env("HERMES_DATABASE_URL", &url);
    w.llm.set_default(|req| {
        let said = req.last_user_text().unwrap_or_default();
        Reply::text(format!("re {}", said.trim()))
    });
    let guilds: Vec<(u64, u64)> = (0..4).map(|k| dc.guild_on_shard(k, 4)).collect();
    let ask_everywhere = |round: &str| dc.ask_every_shard(&guilds, ALICE, "Alice", round);
    // The first process takes every shard; when the second joins, it gives up two.
    let mut daemons = vec![join(&mut w).await];
    wait_spread(&db, &dc, &w, 1).await;
    daemons.push(join(&mut w).await);
    let held = wait_spread(&db, &dc, &w, 2).await;
    println!("shards held: {held:?}");
    // `hermes status` shows the shards each process receives, and this process's part states.
    let (_, out, err) = w.run(&["status"]);
    assert_eq!(out.matches(", receives discord ").count(), 2, "{out}{err}");
    assert!(out.contains("receives discord 0/4, discord 1/4"), "{out}");
    assert!(out.contains("parts here: 0 "), "{out}");
    ask_everywhere("first");
    wait_discord_answers(&dc, &w, 5).await;

    // One process dies: the other takes its shards over (resuming their sessions).
    let victim = by_id(&mut daemons, &held[0]);
    daemons[victim].kill();
    daemons.remove(victim);
    wait_spread(&db, &dc, &w, 1).await;
    ask_everywhere("second");
    wait_discord_answers(&dc, &w, 10).await;
    let got = discord_answers(&dc);
    for (said, n) in &got {
        assert_eq!(*n, 1, "`{said}` answered {n} times");
    }
    // Each shard's session was kept in the store and resumed by the process that took it over.
    assert!(dc.resumes() >= 2, "{} resumes", dc.resumes());
}
