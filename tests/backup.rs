//! `hermes backup` and `hermes restore` through the real binary: a backup taken while four
//! people are talking restores into a fresh home whose daemon has every conversation and sends
//! nothing that was already sent; a restore refuses a home whose daemon runs, a store with
//! conversations (without --force), and a damaged archive, writing nothing; secrets stay out of
//! the archive unless asked for.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use hermes::store::Store;
use serde_json::json;
use support::daemon::{ALICE, BOB, TOKEN, World};
use support::llm::Reply;
use support::telegram::Fault;
use support::{LONG_WAIT, WAIT};

const USERS: [i64; 4] = [ALICE, BOB, 333, 444];
const PER_USER: usize = 10;
/// The message whose answer is still at the model when the backup runs.
const SLOW: &str = "u222 m2";
/// How long the slow answer, and the reply Telegram holds, take.
const HOLD: Duration = Duration::from_secs(4);

/// A world whose four users are allowed and whose model answers `echo: <text>` after `delay`.
async fn world(delay: Duration) -> World {
    let mut w = World::new("").await;
    w.set_env("TELEGRAM_ALLOWED_USERS", "111,222,333,444");
    w.llm.set_default(move |r| {
        Reply::text(format!("echo: {}", r.last_user_text().unwrap_or_default())).delayed(delay)
    });
    w
}

/// `hermes <args>` in `w`'s home, off the runtime's threads (the fakes keep serving).
fn hermes(w: &World, args: &[&str]) -> (bool, String, String) {
    let (status, out, err) = tokio::task::block_in_place(|| w.run(args));
    (status.success(), out, err)
}

/// Wait until the store at `db` shows `n` replies marked sent and none pending.
async fn wait_outbox_settled(db: &Path, n: u64) {
    let store = Store::open(db).unwrap();
    let deadline = Instant::now() + LONG_WAIT;
    loop {
        let stats = store.outbox_stats().await.unwrap();
        if stats.sent >= n && stats.pending == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "outbox never settled at {n} sent: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What a snapshot holds, read straight from the restored file before any daemon opens it.
struct Snapshot {
    /// Outbox payloads and their status.
    outbox: Vec<(String, String)>,
    /// Inbox payloads.
    inbox: Vec<String>,
    /// The users' messages stored in conversations.
    questions: Vec<String>,
}

impl Snapshot {
    fn read(db: &Path) -> Snapshot {
        let conn =
            rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let all = |sql: &str| -> Vec<(String, String)> {
            let mut stmt = conn.prepare(sql).unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        Snapshot {
            outbox: all("SELECT payload, status FROM outbox"),
            inbox: all("SELECT payload, status FROM inbox")
                .into_iter()
                .map(|(p, _)| p)
                .collect(),
            questions: all("SELECT content, role FROM messages WHERE role = 'user'")
                .into_iter()
                .map(|(c, _)| c)
                .collect(),
        }
    }

    /// The status of the outbox row carrying `text`, if any.
    fn reply_status(&self, text: &str) -> Option<&str> {
        let quoted = format!("{text}\"");
        self.outbox
            .iter()
            .find(|(payload, _)| payload.contains(&quoted))
            .map(|(_, status)| status.as_str())
    }

    fn received(&self, question: &str) -> bool {
        let quoted = format!("{question}\"");
        self.inbox.iter().any(|p| p.contains(&quoted))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_load_restores_every_conversation_and_sends_nothing_twice() {
    let mut w = world(Duration::ZERO).await;
    // Every answer takes 150 ms; Bob's third one takes seconds (it is at the model during the
    // backup).
    w.llm.set_default(|r| {
        let text = r.last_user_text().unwrap_or_default();
        let delay = if text == SLOW {
            HOLD
        } else {
            Duration::from_millis(150)
        };
        Reply::text(format!("echo: {text}")).delayed(delay)
    });
    let memory = w.home.path().join("memory/telegram-111/MEMORY.md");
    let skill = w.home.path().join("skills/greeting/SKILL.md");
    for (path, text) in [
        (&memory, "Alice likes green tea.\n"),
        (&skill, "---\nname: greeting\n---\nSay hi.\n"),
    ] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut daemon = w.start().await;
    // Four people talking at once, each sending the next message once answered (messages
    // that arrive during a turn are answered together, in one reply).
    let drivers: Vec<_> = USERS
        .into_iter()
        .map(|user| {
            let tg = w.tg.clone();
            tokio::spawn(async move {
                for i in 0..PER_USER {
                    tg.private_text(user, "Tester", &format!("u{user} m{i}"));
                    let deadline = Instant::now() + WAIT;
                    while tg.sent_to(user).len() <= i {
                        assert!(Instant::now() < deadline, "{user} got no answer to m{i}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            })
        })
        .collect();
    // Mid-conversation: some answers out, most still to come, Bob's third message at the model
    // and a reply on its way that Telegram holds (so the snapshot has it queued, not yet sent).
    w.llm
        .wait_request("Bob's slow message", WAIT, |r| {
            r.last_user_text().as_deref() == Some(SLOW)
        })
        .await;
    let calls = w.tg.calls_of("sendmessage").len();
    w.tg.fail_next("sendMessage", Fault::Delay(HOLD));
    w.tg.wait_calls("sendmessage", calls + 1, WAIT).await;
    let answered_before: Vec<String> = w.tg.sent().into_iter().map(|m| m.visible_text).collect();
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("hermes.tar.gz");
    let (ok, stdout, stderr) = hermes(&w, &["backup", archive.to_str().unwrap()]);
    assert!(ok, "backup failed: {stderr}");
    let answered_after = w.tg.sent().len();
    assert!(
        answered_after < USERS.len() * PER_USER,
        "the backup was not taken under load ({answered_after} answered)"
    );
    assert!(stdout.contains("backup written to"), "{stdout}");
    for driver in drivers {
        driver.await.unwrap();
    }
    w.tg.wait_sent(USERS.len() * PER_USER, LONG_WAIT).await;
    wait_outbox_settled(
        &w.home.path().join("hermes.db"),
        (USERS.len() * PER_USER) as u64,
    )
    .await;
    assert!(daemon.terminate(WAIT).success());

    // A fresh home and a fresh Telegram (its sent log empty).
    let mut fresh = world(Duration::ZERO).await;
    std::fs::remove_file(fresh.home.path().join("config.toml")).unwrap();
    let (ok, stdout, stderr) = hermes(&fresh, &["restore", archive.to_str().unwrap()]);
    assert!(ok, "restore failed: {stderr}");
    assert!(stdout.contains("restored"), "{stdout}");
    let restored_db = fresh.home.path().join("hermes.db");
    let snap = Snapshot::read(&restored_db);

    // Every conversation committed when the backup began is there: each answer the chat had
    // seen, with its question.
    for answer in &answered_before {
        let question = answer.strip_prefix("echo: ").unwrap();
        assert!(
            snap.questions.iter().any(|q| q == question),
            "{question} lost"
        );
        assert!(
            snap.reply_status(answer).is_some(),
            "{answer} lost from the outbox"
        );
    }
    let (ok, listed, _) = hermes(&fresh, &["sessions", "list"]);
    assert!(ok);
    for user in USERS {
        if answered_before
            .iter()
            .any(|a| a.starts_with(&format!("echo: u{user} ")))
        {
            assert!(
                listed.contains(&user.to_string()),
                "no session of {user}:\n{listed}"
            );
        }
    }

    // The restored daemon sends exactly what the snapshot had not sent: the replies pending in
    // its outbox and the answers to the messages it had received but not yet answered; never a
    // reply the snapshot holds as sent. (A reply pending in the snapshot but delivered by the
    // old daemon afterwards reaches the chat again: the outbox's idempotency key is per store,
    // and the snapshot's store never heard of that delivery. The one Telegram held is such a
    // reply.)
    let mut expected = Vec::new();
    let mut already_sent = Vec::new();
    for user in USERS {
        for i in 0..PER_USER {
            let question = format!("u{user} m{i}");
            let answer = format!("echo: {question}");
            match snap.reply_status(&answer) {
                Some("sent") => already_sent.push(answer),
                Some(_) => expected.push(answer),
                None if snap.received(&question) => expected.push(answer),
                None => {}
            }
        }
    }
    let queued = expected
        .iter()
        .filter(|a| snap.reply_status(a) == Some("pending"))
        .count();
    let slow_answer = format!("echo: {SLOW}");
    assert!(
        !already_sent.is_empty() && queued >= 1 && snap.reply_status(&slow_answer).is_none(),
        "sent {already_sent:?}, to send {expected:?}, {queued} of them queued"
    );
    assert!(expected.contains(&slow_answer), "{expected:?}");
    eprintln!(
        "snapshot: {} answers sent, {} to send after the restore ({queued} queued); {} answered when the backup began, {} when it ended",
        already_sent.len(),
        expected.len(),
        answered_before.len(),
        answered_after
    );
    let _restored = fresh.start().await;
    fresh.tg.wait_sent(expected.len(), LONG_WAIT).await;
    wait_outbox_settled(&restored_db, (already_sent.len() + expected.len()) as u64).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut resent: Vec<String> = fresh
        .tg
        .sent()
        .into_iter()
        .map(|m| m.visible_text)
        .collect();
    resent.sort();
    expected.sort();
    assert_eq!(
        resent, expected,
        "the restored daemon sent something twice, or not at all"
    );

    // Alice goes on in the same conversation: her history reaches the model.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    fresh.tg.push_update(json!({"message": {
        "message_id": 100_000, "date": now, "text": "after restore",
        "from": {"id": ALICE, "is_bot": false, "first_name": "Alice"},
        "chat": {"id": ALICE, "type": "private", "first_name": "Alice"}}}));
    let sent = fresh.tg.wait_sent(expected.len() + 1, WAIT).await;
    assert_eq!(sent.last().unwrap().visible_text, "echo: after restore");
    let request = fresh
        .llm
        .requests()
        .into_iter()
        .find(|r| r.last_user_text().as_deref() == Some("after restore"))
        .unwrap();
    let history = serde_json::to_string(&request.messages()).unwrap();
    assert!(history.contains(&format!("u{ALICE} m0")), "{history}");

    // The files came back as they were; the configuration private.
    use std::os::unix::fs::PermissionsExt;
    for path in [&memory, &skill] {
        let name = path.strip_prefix(w.home.path()).unwrap();
        let back = std::fs::read(fresh.home.path().join(name)).unwrap();
        assert_eq!(back, std::fs::read(path).unwrap(), "{}", name.display());
    }
    let config = std::fs::metadata(fresh.home.path().join("config.toml")).unwrap();
    assert_eq!(config.permissions().mode() & 0o777, 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_refuses_a_home_whose_daemon_runs_and_a_store_with_conversations() {
    let mut w = world(Duration::ZERO).await;
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "keep me");
    w.tg.wait_sent(1, WAIT).await;
    wait_outbox_settled(&w.home.path().join("hermes.db"), 1).await;
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("b.tar");
    let (ok, _, stderr) = hermes(&w, &["backup", archive.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let before = listing(w.home.path());

    let (ok, _, stderr) = hermes(&w, &["restore", archive.to_str().unwrap(), "--force"]);
    assert!(!ok);
    assert!(stderr.contains("a hermes daemon is running on"), "{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(listing(w.home.path()), before);

    assert!(daemon.terminate(WAIT).success());
    let config = w.home.path().join("config.toml");
    std::fs::write(&config, "# edited after the backup\n").unwrap();
    let (ok, _, stderr) = hermes(&w, &["restore", archive.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("hermes.db (a store with conversations"),
        "{stderr}"
    );
    assert!(stderr.contains("config.toml (differs"), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    let (ok, stdout, stderr) = hermes(&w, &["restore", archive.to_str().unwrap(), "--force"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("restored"), "{stdout}");
    // The replaced configuration (it may hold secrets the archive's copy lacks) is kept.
    let aside = w.home.path().join("config.toml.before-restore");
    assert_eq!(
        std::fs::read_to_string(aside).unwrap(),
        "# edited after the backup\n"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "");
    let (ok, listed, _) = hermes(&w, &["sessions", "list"]);
    assert!(ok && listed.contains(&ALICE.to_string()), "{listed}");
}

/// Every file under `dir` with its size (for "nothing was written"), but the daemon's own: its
/// database and log change as it runs.
fn listing(dir: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if !["daemon-", "hermes.db"]
                .iter()
                .any(|own| path.to_string_lossy().contains(own))
            {
                let size = entry.metadata().map_or(0, |m| m.len());
                out.insert(path.display().to_string(), size);
            }
        }
    }
    out
}

/// A home with a store and a memory file, and its backup as a plain tar.
async fn backed_up(
    config: &str,
    extra: &[&str],
) -> (World, tempfile::TempDir, std::path::PathBuf, String) {
    let w = World::new(config).await;
    drop(Store::open(&w.home.path().join("hermes.db")).unwrap());
    let memory = w.home.path().join("memory/telegram-111/MEMORY.md");
    std::fs::create_dir_all(memory.parent().unwrap()).unwrap();
    std::fs::write(&memory, "Alice likes green tea.\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("b.tar");
    let mut args = vec!["backup", archive.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (ok, stdout, stderr) = hermes(&w, &args);
    assert!(ok, "{stderr}");
    (w, out, archive, stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_or_cut_archive_is_refused_and_nothing_is_written() {
    let (w, out, archive, _) = backed_up("", &[]).await;
    let whole = std::fs::read(&archive).unwrap();
    let at = whole
        .windows(b"green tea".len())
        .position(|s| s == b"green tea")
        .expect("the memory file in the tar");
    let mut tampered = whole.clone();
    tampered[at] ^= 0x20;
    let bad = out.path().join("tampered.tar");
    std::fs::write(&bad, &tampered).unwrap();
    let target = out.path().join("new-home");
    let (ok, _, stderr) = hermes(
        &w,
        &[
            "restore",
            bad.to_str().unwrap(),
            "--home",
            target.to_str().unwrap(),
        ],
    );
    assert!(!ok);
    assert!(
        stderr.contains("memory/telegram-111/MEMORY.md: its SHA-256 differs"),
        "{stderr}"
    );
    assert!(
        !target.exists(),
        "the refused restore wrote {}",
        target.display()
    );

    let cut = out.path().join("cut.tar");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let (ok, _, stderr) = hermes(
        &w,
        &[
            "restore",
            cut.to_str().unwrap(),
            "--home",
            target.to_str().unwrap(),
        ],
    );
    assert!(!ok);
    assert!(
        stderr.contains("damaged or truncated") || stderr.contains("missing from the archive"),
        "{stderr}"
    );
    assert!(!target.exists());

    let (ok, _, stderr) = hermes(
        &w,
        &[
            "restore",
            archive.to_str().unwrap(),
            "--home",
            target.to_str().unwrap(),
        ],
    );
    assert!(ok, "{stderr}");
    assert!(target.join("hermes.db").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_stay_out_of_the_archive_unless_asked_for() {
    let config = format!(
        "[telegram]\nbot_token = \"{TOKEN}\"\n\n[llm]\napi_key = \"sk-test-key\"\nmodel = \"test-model\"\n"
    );
    let (_w, _out, archive, stdout) = backed_up(&config, &[]).await;
    let bytes = std::fs::read(&archive).unwrap();
    let holds = |needle: &str| bytes.windows(needle.len()).any(|s| s == needle.as_bytes());
    assert!(
        !holds(TOKEN) && !holds("sk-test-key"),
        "a secret is in the archive"
    );
    assert!(
        holds("model = \"test-model\""),
        "the configuration is not in the archive"
    );
    assert!(stdout.contains("llm.api_key"), "{stdout}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&archive).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let (_w, _out, archive, stdout) = backed_up(&config, &["--with-secrets"]).await;
    let bytes = std::fs::read(&archive).unwrap();
    let holds = |needle: &str| bytes.windows(needle.len()).any(|s| s == needle.as_bytes());
    assert!(holds(TOKEN) && holds("sk-test-key"));
    assert!(stdout.contains("secrets are IN this archive"), "{stdout}");
}
