//! The Debian package installed for real on this machine (`dpkg -i`, as root): the binary, the
//! unit (`systemd-analyze verify`), the hermes user, the man page and completions where they
//! belong; the packaged daemon run as the hermes user answers a DM through the fake Telegram;
//! then `dpkg -r` leaves the state and nothing enabled, and `dpkg -P` leaves nothing at all.
//!
//! It needs the package built first: `.ci/test` builds it (`.ci/deb --dev`) and names it in
//! `HERMES_TEST_DEB`; elsewhere the test says how and passes without running. systemd is not
//! PID 1 here, so the unit cannot be started by `systemctl start`: the daemon is started the way
//! the unit would (same binary, user, configuration file and home), without systemd.

use crate::support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::daemon::{ALICE, BOB, TOKEN};
use support::llm::FakeLlm;
use support::telegram::FakeTelegram;
use support::{WAIT, wait_for};

/// Held (flock) for the whole test: two runs on one machine would install over each other.
const LOCK: &str = "/run/lock/hermes-package-test.lock";
/// Exists while this test has the package installed; a run killed before its clean-up leaves it,
/// and the next run purges what it left. Its content says whether the test created the user.
const MARK: &str = "/run/hermes-package-test.installed";

/// Everything the package installs that must be gone after the purge.
const PACKAGED: &[&str] = &[
    "/usr/bin/hermes",
    "/usr/lib/systemd/system/hermes.service",
    "/usr/lib/systemd/system/hermes@.service",
    "/usr/lib/sysusers.d/hermes.conf",
    "/usr/lib/tmpfiles.d/hermes.conf",
    "/usr/share/man/man1/hermes.1.gz",
    "/usr/share/bash-completion/completions/hermes",
    "/usr/share/zsh/vendor-completions/_hermes",
    "/usr/share/fish/vendor_completions.d/hermes.fish",
    "/usr/share/doc/hermes",
];

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

fn run_ok(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "`{program} {}` failed ({}):\n{text}",
        args.join(" "),
        out.status
    );
    text
}

fn package_installed() -> bool {
    let out = run("dpkg-query", &["-W", "-f=${Status}", "hermes"]);
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains("installed")
}

fn user_exists() -> bool {
    run("id", &["hermes"]).status.success()
}

/// Purges the package and removes the user if this test created it: at the end, on a panic,
/// and at the start of the next run after one that was killed.
struct Installed {
    created_user: bool,
}

impl Installed {
    fn clean_up(created_user: bool) {
        let _ = run("dpkg", &["--purge", "hermes"]);
        // What a broken purge would leave (they did not exist before the test, see below).
        let _ = std::fs::remove_dir_all("/var/lib/hermes");
        let _ = std::fs::remove_dir_all("/etc/hermes");
        if created_user && user_exists() {
            let _ = run("userdel", &["hermes"]);
        }
        let _ = std::fs::remove_file(MARK);
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        Installed::clean_up(self.created_user);
    }
}

/// The package to test, or why this run skips it.
fn the_package() -> Option<PathBuf> {
    let Some(deb) = std::env::var_os("HERMES_TEST_DEB") else {
        eprintln!(
            "SKIPPED: the Debian package test installs a package on this machine; it runs in \
             .ci/test, or as root with HERMES_TEST_DEB=$(.ci/deb --dev)"
        );
        return None;
    };
    let deb = PathBuf::from(deb);
    assert!(
        deb.is_file(),
        "HERMES_TEST_DEB={} does not exist: build it with .ci/deb --dev",
        deb.display()
    );
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "installing the package needs root: run .ci/test as root"
    );
    Some(deb)
}

/// An exclusive lock on [`LOCK`], held until the returned file is dropped.
fn lock() -> std::fs::File {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(LOCK)
        .expect("open the lock file");
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor we own.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock {LOCK}");
    file
}

fn mode(path: &str) -> (u32, u32, u32) {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (meta.permissions().mode() & 0o7777, meta.uid(), meta.gid())
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every path under `dir` whose file name starts with `hermes` (symbolic links included).
fn hermes_entries(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with("hermes") {
            found.push(path.clone());
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(hermes_entries(&path));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_debian_package_installs_runs_as_its_user_and_purges_without_a_trace() {
    let Some(deb) = the_package() else { return };
    let _lock = lock();
    if let Ok(mark) = std::fs::read_to_string(MARK) {
        eprintln!("an earlier run was killed with the package installed: purging it");
        Installed::clean_up(mark.trim() == "created-user");
    }
    assert!(
        !package_installed() && !Path::new("/usr/bin/hermes").exists(),
        "hermes is installed on this machine, not by this test: remove it first (dpkg -P hermes)"
    );
    for dir in ["/var/lib/hermes", "/etc/hermes"] {
        assert!(
            !Path::new(dir).exists(),
            "{dir} exists, not made by this test: move it away first (the test purges the package)"
        );
    }
    let created_user = !user_exists();
    std::fs::write(MARK, if created_user { "created-user" } else { "" }).unwrap();
    let _installed = Installed { created_user };

    run_ok("dpkg", &["--install", deb.to_str().unwrap()]);
    assert!(package_installed());

    // The binary, its version.
    let version = run_ok("/usr/bin/hermes", &["--version"]);
    assert_eq!(
        version.trim(),
        format!("hermes {}", env!("CARGO_PKG_VERSION"))
    );

    // The unit runs the packaged binary, and systemd finds nothing wrong with it.
    let unit = read("/usr/lib/systemd/system/hermes.service");
    assert!(
        unit.contains("\nExecStart=/usr/bin/hermes --config /etc/hermes/config.toml gateway\n"),
        "{unit}"
    );
    let verify = run(
        "systemd-analyze",
        &["verify", "/usr/lib/systemd/system/hermes.service"],
    );
    let stderr = String::from_utf8_lossy(&verify.stderr);
    assert!(
        verify.status.success() && stderr.trim().is_empty(),
        "systemd-analyze verify: {stderr}"
    );
    // The template unit ships exactly when this version of the CLI can print it.
    let help = run_ok("/usr/bin/hermes", &["gateway", "unit", "--help"]);
    let template = Path::new("/usr/lib/systemd/system/hermes@.service");
    assert_eq!(template.exists(), help.contains("--template"), "{help}");
    if template.exists() {
        let text = read("/usr/lib/systemd/system/hermes@.service");
        assert!(text.contains("\nExecStart=/usr/bin/hermes "), "{text}");
    }
    // Installing enables and starts nothing.
    assert_eq!(
        hermes_entries(Path::new("/etc/systemd/system")),
        Vec::<PathBuf>::new()
    );

    // The system user, its configuration directory and its state directory.
    let passwd = run_ok("getent", &["passwd", "hermes"]);
    let fields: Vec<&str> = passwd.trim().split(':').collect();
    assert_eq!(fields[5], "/var/lib/hermes", "{passwd}");
    assert!(fields[6].ends_with("nologin"), "{passwd}");
    let uid: u32 = fields[2].parse().unwrap();
    let gid: u32 = fields[3].parse().unwrap();
    assert!(uid < 1000, "a system user: {passwd}");
    assert_eq!(mode("/etc/hermes"), (0o750, 0, gid));
    assert_eq!(mode("/etc/hermes/config.toml"), (0o640, 0, gid));
    assert_eq!(mode("/var/lib/hermes"), (0o700, uid, gid));

    // The documentation: the example configuration, the man page, the completions.
    let example = read("/usr/share/doc/hermes/examples/config.toml");
    assert_eq!(
        example,
        include_str!("../config/hermes.example.toml"),
        "the packaged example is the repository's"
    );
    let mut man = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(
            std::fs::File::open("/usr/share/man/man1/hermes.1.gz").unwrap(),
        ),
        &mut man,
    )
    .expect("the man page is gzip'd text");
    assert!(man.contains(".TH hermes 1"), "{man}");
    assert!(man.contains("gateway"), "{man}");
    assert!(read("/usr/share/bash-completion/completions/hermes").contains("complete -F _hermes"));
    assert!(read("/usr/share/zsh/vendor-completions/_hermes").starts_with("#compdef hermes"));
    assert!(
        read("/usr/share/fish/vendor_completions.d/hermes.fish").contains("complete -c hermes")
    );

    // The packaged daemon, as the unit runs it (user, configuration, home), answers a DM.
    let tg = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("daemon.log");
    let mut child = Command::new("/usr/bin/hermes")
        .args(["--config", "/etc/hermes/config.toml", "gateway"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HERMES_HOME", "/var/lib/hermes")
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .env("TELEGRAM_API_URL", tg.api_url())
        .env("TELEGRAM_ALLOWED_USERS", format!("{ALICE},{BOB}"))
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-key")
        .env("HERMES_MODEL", "test-model")
        .env("HERMES_ADMIN_LISTEN", "127.0.0.1:0")
        .current_dir("/var/lib/hermes")
        .uid(uid)
        .gid(gid)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start /usr/bin/hermes gateway as hermes");
    let daemon_log = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for(
        WAIT,
        "the packaged daemon polling Telegram",
        || (!tg.calls_of("getupdates").is_empty()).then_some(()),
        daemon_log,
    )
    .await;
    tg.private_text(ALICE, "Alice", "hello from the package test");
    let sent = tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].chat_id, ALICE);
    // Its state is in /var/lib/hermes, owned by hermes.
    let state: Vec<_> = std::fs::read_dir("/var/lib/hermes")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(!state.is_empty(), "nothing in /var/lib/hermes");
    for path in &state {
        assert_eq!(
            std::fs::metadata(path).unwrap().uid(),
            uid,
            "{}",
            path.display()
        );
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("no exit 30 s after SIGTERM:\n{}", daemon_log());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}:\n{}", daemon_log());

    // An operator enabled it; removal disables it and keeps the state and the configuration.
    run_ok("systemctl", &["enable", "hermes.service"]);
    let wants = Path::new("/etc/systemd/system/multi-user.target.wants/hermes.service");
    assert!(
        wants.symlink_metadata().is_ok(),
        "systemctl enable made no link"
    );
    run_ok("dpkg", &["--remove", "hermes"]);
    assert!(
        wants.symlink_metadata().is_err(),
        "still enabled after dpkg -r"
    );
    for path in ["/usr/bin/hermes", "/usr/lib/systemd/system/hermes.service"] {
        assert!(!Path::new(path).exists(), "{path} left after dpkg -r");
    }
    assert!(
        Path::new("/var/lib/hermes").is_dir(),
        "state removed by dpkg -r"
    );
    assert!(Path::new("/etc/hermes/config.toml").is_file());

    // Purge: nothing left.
    run_ok("dpkg", &["--purge", "hermes"]);
    assert!(!package_installed());
    for path in PACKAGED.iter().chain(&["/var/lib/hermes", "/etc/hermes"]) {
        assert!(
            Path::new(path).symlink_metadata().is_err(),
            "{path} left after dpkg -P"
        );
    }
    for dir in ["/etc/systemd", "/usr/lib/systemd", "/var/lib/systemd"] {
        assert_eq!(
            hermes_entries(Path::new(dir)),
            Vec::<PathBuf>::new(),
            "left under {dir} after dpkg -P"
        );
    }
}
