//! `hermes setup` through the real binary: the wizard answered in a real pseudo-terminal
//! (hidden token input, a refused token and a refused key asked again, the allowlist from the
//! account that writes to the bot, the model picked from the provider's list) writes a
//! configuration whose daemon answers that person's DMs; `--non-interactive` verifies the same
//! way, exits non-zero on a refused token or key without printing it, and replaces existing
//! files only with `--force`; Discord, Slack, email and Matrix are checked on the spot against
//! the fakes, Dovecot and Synapse.

use crate::support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use expectrl::{Expect, Session};
use support::WAIT;
use support::daemon::{ALICE, TOKEN, World, binary};

const WRONG_TOKEN: &str = "999:wrong-token-zzz";
const API_KEY: &str = "sk-right-key-1234";
const WRONG_KEY: &str = "sk-wrong-key-5678";

/// A world whose fakes are up, with no configuration file yet.
async fn world() -> World {
    let w = World::new("").await;
    std::fs::remove_file(w.home.path().join("config.toml")).expect("remove the config");
    w.llm.set_api_key(Some(API_KEY));
    w.llm.set_models(&["alpha-model", "test-model"]);
    w
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// `NAME=value` lines of an environment file setup wrote.
fn env_file(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .expect("read hermes.env")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The terminal session, with everything it printed kept.
struct Terminal {
    session: expectrl::session::OsSession,
    transcript: String,
}

impl Terminal {
    fn expect(&mut self, text: &str) {
        match self.session.expect(text) {
            Ok(found) => {
                self.transcript
                    .push_str(&String::from_utf8_lossy(found.before()));
                self.transcript
                    .push_str(&String::from_utf8_lossy(found.as_bytes()));
            }
            Err(e) => panic!(
                "`{text}` never appeared ({e}); the terminal showed:\n{}",
                self.transcript
            ),
        }
    }

    fn send(&mut self, keys: &str) {
        self.session.send(keys).expect("type into the terminal");
    }

    /// Types a line into a hidden prompt once the prompt reads it. The prompt turns the
    /// terminal's echo off with TCSAFLUSH, which throws away whatever was typed before: a line
    /// sent as soon as the prompt's text shows can be lost on a slow machine, so wait for the
    /// echo to go off first.
    fn hidden_line(&mut self, text: &str) {
        let deadline = std::time::Instant::now() + WAIT;
        while self
            .session
            .get_process()
            .get_echo()
            .expect("read the terminal's modes")
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the hidden prompt never turned echo off; the terminal showed:\n{}",
                self.transcript
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        self.send(&format!("{text}\r"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_in_a_terminal_writes_a_configuration_whose_daemon_answers_a_dm() {
    let mut w = world().await;
    // `~/.hermes` of a user whose home is elsewhere: the home the user service reads, so the
    // wizard offers to install it.
    let user_home = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(w.home.path(), user_home.path().join(".hermes")).unwrap();
    let mut cmd = std::process::Command::new(binary());
    cmd.arg("setup")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm")
        .env("HOME", user_home.path())
        // The fakes, where the daemon's configuration would name the real services.
        .env("TELEGRAM_API_URL", w.tg.api_url())
        .env("OPENAI_BASE_URL", w.llm.base_url());
    let tg = w.tg.clone();
    let transcript = tokio::task::block_in_place(|| {
        let mut session = Session::spawn(cmd).expect("spawn hermes setup in a pty");
        session.set_expect_timeout(Some(WAIT));
        let mut t = Terminal {
            session,
            transcript: String::new(),
        };
        t.expect("Where should hermes answer?");
        t.send("\r"); // Telegram is checked.
        t.expect("Telegram bot token");
        t.hidden_line(WRONG_TOKEN);
        t.expect("Telegram did not accept it");
        t.expect("Telegram bot token");
        t.hidden_line(TOKEN);
        t.expect("✓ Telegram: @hermes_test_bot");
        t.expect("Who may talk to hermes on Telegram?");
        t.send("\r"); // the account that writes now
        t.expect("Send any message to your bot now");
        tg.private_text(ALICE, "Alice", "hello from setup");
        t.expect("Allow Alice");
        t.send("y");
        t.expect("Which model provider?");
        t.send("\r"); // the one configured now: the fake
        t.expect("API key");
        t.hidden_line(WRONG_KEY);
        t.expect("did not accept it");
        t.expect("Which model provider?");
        t.send("\r");
        t.expect("API key");
        t.hidden_line(API_KEY);
        t.expect("2 models offered");
        t.expect("Which model?");
        t.send("j\r"); // alpha-model, then test-model
        t.expect("Install and start hermes as a systemd user service");
        t.send("n");
        t.expect("Start it in this terminal");
        t.session.expect(expectrl::Eof).expect("setup ends");
        let status = t.session.get_process().wait().expect("exit status");
        assert!(
            matches!(status, expectrl::process::unix::WaitStatus::Exited(_, 0)),
            "{status:?}\n{}",
            t.transcript
        );
        t.transcript
    });
    for secret in [TOKEN, WRONG_TOKEN, API_KEY, WRONG_KEY] {
        assert!(
            !transcript.contains(secret),
            "the terminal showed {secret}:\n{transcript}"
        );
    }

    let config_path = w.home.path().join("config.toml");
    let env_path = w.home.path().join("hermes.env");
    assert_eq!(mode(&config_path), 0o600);
    assert_eq!(mode(&env_path), 0o600);
    let config = std::fs::read_to_string(&config_path).unwrap();
    let parsed: toml::Table = toml::from_str(&config).expect("valid TOML");
    assert_eq!(
        parsed["telegram"]["allowed_users"].as_array().unwrap(),
        &vec![toml::Value::from(ALICE.to_string())],
        "{config}"
    );
    assert_eq!(
        parsed["telegram"]["api_url"].as_str(),
        Some(w.tg.api_url().as_str())
    );
    assert_eq!(parsed["llm"]["model"].as_str(), Some("test-model"));
    assert_eq!(
        parsed["llm"]["base_url"].as_str(),
        Some(w.llm.base_url().as_str())
    );
    assert!(
        !config.contains(TOKEN) && !config.contains(API_KEY),
        "{config}"
    );
    let env = env_file(&env_path);
    assert_eq!(
        env.get("TELEGRAM_BOT_TOKEN").map(String::as_str),
        Some(TOKEN)
    );
    assert_eq!(env.get("OPENAI_API_KEY").map(String::as_str), Some(API_KEY));
    assert_eq!(env.len(), 2, "{env:?}");

    // The daemon with that home and only what setup wrote, started as a shell would start it
    // (nothing sourced: hermes reads its home's hermes.env itself): the message written during
    // setup, then a new one, are answered.
    for var in [
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_API_URL",
        "TELEGRAM_ALLOWED_USERS",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "HERMES_MODEL",
    ] {
        w.unset_env(var);
    }
    let _daemon = w.start().await;
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].chat_id, ALICE);
    assert_eq!(sent[0].visible_text, "echo: hello from setup");
    w.tg.private_text(ALICE, "Alice", "and now?");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent[1].chat_id, ALICE);
    assert_eq!(sent[1].visible_text, "echo: and now?");
    let models: Vec<String> = w
        .llm
        .requests()
        .iter()
        .filter_map(|r| r.body["model"].as_str().map(str::to_owned))
        .collect();
    assert!(
        !models.is_empty() && models.iter().all(|m| m == "test-model"),
        "{models:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_interactive_setup_verifies_refuses_without_printing_secrets_and_needs_force() {
    let w = world().await;
    let config_path = w.home.path().join("config.toml");
    let env_path = w.home.path().join("hermes.env");
    let setup = |extra: &[&str]| {
        let mut args = vec!["setup", "--non-interactive"];
        args.extend_from_slice(extra);
        let (status, out, err) = tokio::task::block_in_place(|| w.run(&args));
        (status.code(), format!("{out}\n{err}"))
    };

    // A refused token: exit 1, the platform's reason, no token, nothing written.
    let (code, output) = setup(&[
        "--telegram-token",
        WRONG_TOKEN,
        "--allow",
        "111",
        "--api-key",
        API_KEY,
        "--model",
        "test-model",
    ]);
    assert_eq!(code, Some(1), "{output}");
    assert!(
        output.contains("Telegram did not accept the credentials"),
        "{output}"
    );
    assert!(!output.contains(WRONG_TOKEN), "{output}");
    assert!(!config_path.exists() && !env_path.exists());

    // A refused key: exit 1, the provider's reason, no key.
    let (code, output) = setup(&[
        "--allow",
        "111",
        "--api-key",
        WRONG_KEY,
        "--model",
        "test-model",
    ]);
    assert_eq!(code, Some(1), "{output}");
    assert!(output.contains("did not accept the key"), "{output}");
    assert!(!output.contains(WRONG_KEY), "{output}");
    assert!(!config_path.exists());

    // A model the provider does not list: exit 1, naming those it does.
    let (code, output) = setup(&["--allow", "111", "--api-key", API_KEY, "--model", "nope"]);
    assert_eq!(code, Some(1), "{output}");
    assert!(output.contains("alpha-model, test-model"), "{output}");

    // The token from TELEGRAM_BOT_TOKEN (the world's environment), everything verified.
    let (code, output) = setup(&[
        "--allow",
        "telegram:111",
        "--api-key",
        API_KEY,
        "--model",
        "test-model",
    ]);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("✓ Telegram: @hermes_test_bot"), "{output}");
    assert!(
        !output.contains(TOKEN) && !output.contains(API_KEY),
        "{output}"
    );
    assert_eq!(mode(&config_path), 0o600);
    assert_eq!(mode(&env_path), 0o600);
    let config = std::fs::read_to_string(&config_path).unwrap();
    assert!(config.contains("allowed_users = [\"111\"]"), "{config}");
    assert!(config.contains("model = \"test-model\""), "{config}");
    let env = env_file(&env_path);
    assert_eq!(
        env.get("TELEGRAM_BOT_TOKEN").map(String::as_str),
        Some(TOKEN)
    );
    assert_eq!(env.get("OPENAI_API_KEY").map(String::as_str), Some(API_KEY));
    let (status, out, err) = tokio::task::block_in_place(|| w.run(&["config", "check"]));
    assert!(status.success(), "{out}{err}");

    // Again: the files exist, so only with --force, which keeps a copy of each.
    let again = [
        "--allow",
        "telegram:222",
        "--api-key",
        API_KEY,
        "--model",
        "alpha-model",
    ];
    let (code, output) = setup(&again);
    assert_eq!(code, Some(2), "{output}");
    assert!(output.contains("--force"), "{output}");
    assert!(
        std::fs::read_to_string(&config_path)
            .unwrap()
            .contains("\"111\"")
    );
    let mut forced = again.to_vec();
    forced.push("--force");
    let (code, output) = setup(&forced);
    assert_eq!(code, Some(0), "{output}");
    let config = std::fs::read_to_string(&config_path).unwrap();
    assert!(config.contains("allowed_users = [\"222\"]"), "{config}");
    let backups: Vec<String> = std::fs::read_dir(w.home.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".bak-"))
        .collect();
    assert_eq!(backups.len(), 2, "{backups:?}");
    for b in &backups {
        assert_eq!(mode(&w.home.path().join(b)), 0o600, "{b}");
    }
}

/// Discord, Slack (Socket Mode), email and Matrix set up by flags, each checked on the spot
/// against the fake Discord (`/users/@me`) and Slack (`auth.test`), the real Dovecot (IMAP and
/// SMTP login) and the real Synapse (a login): a refused credential of any of them stops setup
/// without printing it; accepted ones are written (the secrets to hermes.env) into a
/// configuration `hermes config check` accepts.
#[cfg(all(
    feature = "discord",
    feature = "slack",
    feature = "email",
    feature = "matrix"
))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_interactive_setup_checks_discord_slack_email_and_matrix_on_the_spot() {
    use support::discord::FakeDiscord;
    use support::email::MailServers;
    use support::slack::{APP_TOKEN, BOT_TOKEN, FakeSlack};

    let mut w = world().await;
    let discord = FakeDiscord::start(TOKEN).await;
    let slack = FakeSlack::start().await;
    let mail = MailServers::get();
    let synapse = crate::matrix_support::Synapse::get();
    let matrix_user = synapse
        .register(&format!("setup{}", std::process::id()))
        .await;
    w.unset_env("TELEGRAM_BOT_TOKEN");
    // Where the configuration would name the real services (and the test mail server's ports).
    for (k, v) in [
        ("DISCORD_API_URL", discord.api_url()),
        ("SLACK_API_URL", slack.api_url()),
        ("EMAIL_IMAP_PORT", mail.imap_port.to_string()),
        ("EMAIL_IMAP_SECURITY", "plain".into()),
        ("EMAIL_SMTP_PORT", mail.smtp_port.to_string()),
        ("EMAIL_SMTP_SECURITY", "plain".into()),
        ("EMAIL_SMTP_USER", String::new()),
    ] {
        w.set_env(k, &v);
    }
    let mailbox = format!("setup{}@localhost", std::process::id());
    let matrix_id = matrix_user.to_string();
    let args =
        |discord_token: &str, slack_token: &str, mail_password: &str, matrix_password: &str| {
            let owned: Vec<String> = [
                "setup",
                "--non-interactive",
                "--discord-token",
                discord_token,
                "--slack-bot-token",
                slack_token,
                "--slack-app-token",
                APP_TOKEN,
                "--email-address",
                &mailbox,
                "--email-password",
                mail_password,
                "--email-imap-host",
                "127.0.0.1",
                "--email-smtp-host",
                "127.0.0.1",
                "--email-authserv-id",
                &mail.authserv_id,
                "--matrix-homeserver",
                &synapse.url,
                "--matrix-user-id",
                &matrix_id,
                "--matrix-password",
                matrix_password,
                "--allow",
                "discord:111111111111111111,slack:U0ALICE,email:alice@localhost",
                "--allow",
                "matrix:@alice:localhost",
                "--api-key",
                API_KEY,
                "--model",
                "test-model",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            owned
        };
    let setup = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, out, err) = tokio::task::block_in_place(|| w.run(&args));
        (status.code(), format!("{out}\n{err}"))
    };
    let password = crate::matrix_support::PASSWORD;

    // Each platform refusing in turn: exit 1, naming it, never printing what was refused.
    for (refused, wrong, args) in [
        (
            "Discord",
            "wrong-discord",
            args("wrong-discord", BOT_TOKEN, "secret", password),
        ),
        (
            "Slack",
            "xoxb-wrong",
            args(TOKEN, "xoxb-wrong", "secret", password),
        ),
        (
            "email",
            "wrong-mail-pw",
            args(TOKEN, BOT_TOKEN, "wrong-mail-pw", password),
        ),
        (
            "Matrix",
            "wrong-matrix",
            args(TOKEN, BOT_TOKEN, "secret", "wrong-matrix"),
        ),
    ] {
        let (code, output) = setup(args);
        assert_eq!(code, Some(1), "{refused}: {output}");
        assert!(
            output.contains(&format!("{refused} did not accept the credentials")),
            "{refused}: {output}"
        );
        assert!(!output.contains(wrong), "{output}");
        assert!(!w.home.path().join("config.toml").exists());
    }

    let (code, output) = setup(args(TOKEN, BOT_TOKEN, "secret", password));
    assert_eq!(code, Some(0), "{output}");
    for checked in ["✓ Discord:", "✓ Slack:", "✓ email:", "✓ Matrix:"] {
        assert!(output.contains(checked), "{checked}: {output}");
    }
    for secret in [TOKEN, BOT_TOKEN, APP_TOKEN, password, API_KEY] {
        assert!(!output.contains(secret), "{output}");
    }
    let config = std::fs::read_to_string(w.home.path().join("config.toml")).unwrap();
    for section in ["[discord]", "[slack]", "[email]", "[matrix]"] {
        assert!(config.contains(section), "{section}: {config}");
    }
    assert!(config.contains(&matrix_id), "{config}");
    let env = env_file(&w.home.path().join("hermes.env"));
    assert_eq!(
        env.get("DISCORD_BOT_TOKEN").map(String::as_str),
        Some(TOKEN)
    );
    assert_eq!(
        env.get("SLACK_BOT_TOKEN").map(String::as_str),
        Some(BOT_TOKEN)
    );
    assert_eq!(
        env.get("SLACK_APP_TOKEN").map(String::as_str),
        Some(APP_TOKEN)
    );
    assert_eq!(
        env.get("EMAIL_PASSWORD").map(String::as_str),
        Some("secret")
    );
    assert_eq!(
        env.get("MATRIX_PASSWORD").map(String::as_str),
        Some(password)
    );
    // hermes reads the home's hermes.env itself (the secrets are in no variable here).
    let (status, out, err) = tokio::task::block_in_place(|| w.run(&["config", "check"]));
    assert!(status.success(), "{out}{err}");
}
