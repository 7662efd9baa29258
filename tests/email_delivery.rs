//! Email delivery guarantees through the real binary against a real Dovecot: a daemon killed
//! between storing a mail and answering it answers exactly once after restart; a daemon whose
//! IMAP server restarts reconnects and answers the next mail; progress survives restarts.
//!
//! Needs the mail servers: run `.ci/mail-servers` first (as root; `.ci/run` does it). Without
//! them these tests fail with that instruction; they never skip silently.

use crate::support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::WAIT;
use support::email::{MailWorld, body_text, header};
use support::http::free_port;
use support::llm::{Gate, Reply};

const CONFIG: &str = "[email]\npoll_secs = 600\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_storing_before_replying_replies_exactly_once_after_restart() {
    let mut mw = MailWorld::new(CONFIG).await;
    let hang = Gate::new();
    mw.w.llm
        .push(Reply::text("never delivered").after(hang.clone()));
    let mut daemon = mw.start().await;
    let alice = mw.alice_addr.clone();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "k1@alice.test", "Kill", "remember me", ""),
    );
    // The model call proves the mail was stored and its turn started.
    mw.w.llm.wait_requests(1, WAIT).await;
    daemon.kill();
    assert!(mw.mail.mails(&mw.alice).is_empty());

    let _daemon = mw.start().await;
    let replies = mw.wait_mails(&mw.alice, 1, WAIT).await;
    assert_eq!(
        header(&replies[0], "In-Reply-To").as_deref(),
        Some("<k1@alice.test>")
    );
    assert!(body_text(&replies[0]).contains("remember me"));
    hang.open();
    // A sentinel after the restart: once it is answered, nothing else is coming.
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "k2@alice.test", "Sentinel", "sentinel", ""),
    );
    let replies = mw.wait_mails(&mw.alice, 2, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let all = mw.mail.mails(&mw.alice);
    assert_eq!(all.len(), 2, "exactly one reply per mail");
    assert_eq!(
        header(&replies[1], "In-Reply-To").as_deref(),
        Some("<k2@alice.test>")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_daemon_neither_repeats_nor_skips_mail() {
    let mut mw = MailWorld::new(CONFIG).await;
    let mut daemon = mw.start().await;
    let alice = mw.alice_addr.clone();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "r1@alice.test", "One", "one", ""),
    );
    mw.wait_mails(&mw.alice, 1, WAIT).await;
    daemon.terminate(Duration::from_secs(10));
    // Arrives while the daemon is down.
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "r2@alice.test", "Two", "two", ""),
    );
    let _daemon = mw.start().await;
    let replies = mw.wait_mails(&mw.alice, 2, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mw.mail.mails(&mw.alice).len(), 2);
    assert_eq!(
        header(&replies[1], "In-Reply-To").as_deref(),
        Some("<r2@alice.test>")
    );
    let state = std::fs::read_to_string(mw.w.home.path().join("email-imap-state.json")).unwrap();
    assert!(state.contains("\"last_uid\":2"), "{state}");
}

/// A private Dovecot serving IMAP on its own port over the same mailboxes.
struct PrivateImap {
    conf: std::path::PathBuf,
    port: u16,
    child: Option<Child>,
}

impl PrivateImap {
    fn new(mw: &MailWorld) -> PrivateImap {
        let port = free_port();
        let dir = mw.mail.data.join(format!("private-{port}"));
        std::fs::create_dir_all(dir.join("run")).unwrap();
        let shared = std::fs::read_to_string(mw.mail.data.join("dovecot.conf")).unwrap();
        let run = mw.mail.data.join("run");
        let private_run = dir.join("run").display().to_string();
        let mut service = String::new();
        let mut lines = Vec::new();
        for l in shared.lines() {
            let t = l.trim_start();
            if let Some(name) = t.strip_prefix("service ") {
                service = name.trim_end_matches(" {").to_owned();
            }
            let line = if t.starts_with("log_path") {
                format!("log_path = {}", dir.join("dovecot.log").display())
            } else if t.starts_with("protocols") {
                "protocols = imap".to_owned()
            } else if t.starts_with("port = ") && !t.ends_with("= 0") {
                // IMAP on our own port; LMTP stays with the shared instance.
                let p = if service == "imap-login" { port } else { 0 };
                format!("    port = {p}")
            } else {
                l.replace(&run.display().to_string(), &private_run)
            };
            lines.push(line);
        }
        let conf = lines.join("\n") + "\n";
        let path = dir.join("dovecot.conf");
        std::fs::write(&path, conf).unwrap();
        let mut p = PrivateImap {
            conf: path,
            port,
            child: None,
        };
        p.start();
        p
    }

    fn start(&mut self) {
        let child = Command::new("dovecot")
            .args(["-F", "-c"])
            .arg(&self.conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dovecot");
        self.child = Some(child);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("private dovecot did not listen on {}", self.port);
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
            let _ = c.wait();
        }
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for PrivateImap {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_reconnects_after_the_imap_server_restarts() {
    let mut mw = MailWorld::new(CONFIG).await;
    let mut imap = PrivateImap::new(&mw);
    mw.w.set_env("EMAIL_IMAP_PORT", &imap.port.to_string());
    let _daemon = mw.start().await;
    let alice = mw.alice_addr.clone();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "b1@alice.test", "Before", "before", ""),
    );
    mw.wait_mails(&mw.alice, 1, WAIT).await;

    let connections = mw.connections();
    imap.stop();
    tokio::time::sleep(Duration::from_millis(500)).await;
    imap.start();
    mw.wait_connected(connections, WAIT).await;
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "a1@alice.test", "After", "after", ""),
    );
    let replies = mw.wait_mails(&mw.alice, 2, WAIT).await;
    assert_eq!(
        header(&replies[1], "In-Reply-To").as_deref(),
        Some("<a1@alice.test>")
    );
    assert!(body_text(&replies[1]).contains("after"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_both_servers_and_names_a_wrong_password() {
    let mut mw = MailWorld::new(CONFIG).await;
    let (_, out, err) = mw.w.run(&["doctor"]);
    let all = format!("{out}{err}");
    assert!(
        all.contains(&mw.bot_addr) && all.contains("IMAP 127.0.0.1"),
        "{all}"
    );
    mw.w.set_env("EMAIL_PASSWORD", "wrong-password");
    let (status, out, err) = mw.w.run(&["doctor"]);
    let all = format!("{out}{err}");
    assert!(!status.success(), "{all}");
    assert!(all.contains("IMAP login refused"), "{all}");
    assert!(
        !all.contains("wrong-password"),
        "the password is not shown: {all}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_start_leaves_a_backlog_of_old_unread_mail_alone() {
    let mut mw = MailWorld::new(CONFIG).await;
    let alice = mw.alice_addr.clone();
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "old@alice.test", "Old", "old", ""),
    );
    let _daemon = mw.start().await;
    mw.send_to_bot(
        &alice,
        &mw.text_mail(&alice, "new@alice.test", "New", "new", ""),
    );
    let replies = mw.wait_mails(&mw.alice, 1, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mw.mail.mails(&mw.alice).len(), 1);
    assert_eq!(
        header(&replies[0], "In-Reply-To").as_deref(),
        Some("<new@alice.test>")
    );
    assert_eq!(mw.w.llm.requests().len(), 1);
}
