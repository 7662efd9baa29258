//! A real OpenSSH server on 127.0.0.1 for the SSH sandbox tests: its own host key, its own
//! `authorized_keys` holding a client key made for the test, public-key login only. It can be
//! killed (the listener and every session it serves) and started again on the same port.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

/// The remote account the tests log in as: a plain user whose shell is `/bin/sh`, so no login
/// script of the machine (root's `.bashrc` may run tools that take locks) sits between the
/// daemon and the command. `.ci/test` creates it.
pub const USER: &str = "hermes-ssh-test";

/// The home of [`USER`]; fails with the command that creates the account when it is missing.
pub fn user_home() -> PathBuf {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let home = passwd
        .lines()
        .find(|l| l.starts_with(&format!("{USER}:")))
        .and_then(|l| l.split(':').nth(5))
        .map(PathBuf::from);
    match home {
        Some(home) if home.is_dir() => home,
        _ => panic!(
            "the test account {USER} is missing: run .ci/test (or useradd --create-home --shell \
             /bin/sh {USER} && usermod -p '*' {USER})"
        ),
    }
}

/// A fresh directory for one test's remote workspaces in [`USER`]'s home, removed on drop.
pub struct RemoteRoot(pub PathBuf);

impl RemoteRoot {
    pub fn new() -> RemoteRoot {
        let dir = tempfile::Builder::new()
            .prefix("ws-")
            .tempdir_in(user_home())
            .unwrap()
            .keep();
        // The account must be able to create its workspaces there.
        let owner = Command::new("chown")
            .arg(format!("{USER}:"))
            .arg(&dir)
            .status()
            .unwrap();
        assert!(owner.success(), "chown {}", dir.display());
        RemoteRoot(dir)
    }
}

impl Drop for RemoteRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "hermes-test", "-f"])
        .arg(path)
        .status()
        .expect("run ssh-keygen (apt-get install openssh-client)");
    assert!(status.success(), "ssh-keygen failed");
}

impl Sshd {
    /// Keys, configuration and a running server. Fails with the command that fixes it when
    /// OpenSSH's server is not installed.
    pub fn start() -> Sshd {
        assert!(
            Path::new(SSHD).exists(),
            "OpenSSH's server is not installed: run .ci/test (or apt-get install openssh-server)"
        );
        let dir = tempfile::tempdir().unwrap();
        keygen(&dir.path().join("host"));
        keygen(&dir.path().join("client"));
        std::fs::copy(
            dir.path().join("client.pub"),
            dir.path().join("authorized_keys"),
        )
        .unwrap();
        // The privilege separation directory Debian's sshd insists on.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let d = dir.path().display();
        std::fs::write(
            dir.path().join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host\nPidFile {d}/sshd.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 PermitRootLogin no\nAllowUsers {USER}\nStrictModes no\nUsePAM no\n\
                 MaxStartups 100\nMaxSessions 100\nLogLevel ERROR\n\
                 Subsystem sftp internal-sftp\n"
            ),
        )
        .unwrap();
        let mut sshd = Sshd {
            dir,
            port,
            child: None,
        };
        sshd.restart();
        sshd
    }

    /// Start the server (again), waiting until it accepts connections.
    pub fn restart(&mut self) {
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(self.dir.path().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start sshd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd did not start on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kill the listener and every server process of its sessions (not the commands they run).
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let root = child.id() as i32;
        let mut doomed = vec![root];
        // Descendants by parent pid, found before anything dies (orphans move to init).
        let mut i = 0;
        while i < doomed.len() {
            let parent = doomed[i];
            for (pid, ppid) in processes() {
                if ppid == parent && !doomed.contains(&pid) {
                    doomed.push(pid);
                }
            }
            i += 1;
        }
        // Only the server's own processes, as `pkill sshd` would: what runs in a session must
        // be ended by the client side noticing the dropped connection.
        for pid in doomed {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.starts_with("sshd") {
                // SAFETY: plain kill(2) of a positive pid.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        let _ = child.wait();
    }

    pub fn client_key(&self) -> PathBuf {
        self.dir.path().join("client")
    }

    /// A `known_hosts` line for this server's key.
    pub fn known_hosts_line(&self) -> String {
        let key = std::fs::read_to_string(self.dir.path().join("host.pub")).unwrap();
        let mut parts = key.split_whitespace();
        let (kind, body) = (parts.next().unwrap(), parts.next().unwrap());
        format!("[127.0.0.1]:{} {kind} {body}\n", self.port)
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `(pid, parent pid)` of every process.
fn processes() -> Vec<(i32, i32)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid = stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}
