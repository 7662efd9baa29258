//! A real `dockerd` for the Docker sandbox tests, started with no network of its own
//! (`--bridge=none`, no iptables: these machines must never send traffic to private ranges) and
//! everything under a temporary directory, with a busybox image imported from Debian's
//! `busybox-static` (no registry is reachable). Driven with the `docker` CLI.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const IMAGE: &str = "hermes-test-busybox";

pub struct Dockerd {
    pub dir: tempfile::TempDir,
    child: Child,
}

impl Dockerd {
    /// A running daemon with the test image. Fails with the command that fixes it when Docker
    /// or busybox is missing.
    pub fn start() -> Dockerd {
        assert!(
            ["/usr/sbin/dockerd", "/usr/bin/dockerd"]
                .iter()
                .any(|p| Path::new(p).exists()),
            "dockerd is missing: run .ci/test (or apt-get install docker.io)"
        );
        assert!(
            Path::new("/bin/busybox").exists(),
            "/bin/busybox is missing: run .ci/test (or apt-get install busybox-static)"
        );
        let dir = tempfile::Builder::new()
            .prefix("hd")
            .tempdir_in("/tmp")
            .unwrap();
        let d = dir.path();
        let log = std::fs::File::create(d.join("dockerd.log")).unwrap();
        let child = Command::new("dockerd")
            .args(["--bridge=none", "--iptables=false", "--ip6tables=false"])
            .arg("--data-root")
            .arg(d.join("data"))
            .arg("--exec-root")
            .arg(d.join("exec"))
            .arg("--pidfile")
            .arg(d.join("docker.pid"))
            .arg("-H")
            .arg(format!("unix://{}", d.join("docker.sock").display()))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start dockerd");
        let docker = Dockerd { dir, child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !docker.cli(&["version"]).status.success() {
            assert!(
                Instant::now() < deadline,
                "dockerd did not answer: {}",
                std::fs::read_to_string(docker.dir.path().join("dockerd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        docker.import_busybox();
        docker
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("docker.sock")
    }

    /// Run the `docker` CLI against this daemon.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new("docker")
            .arg("-H")
            .arg(format!("unix://{}", self.socket().display()))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run docker")
    }

    fn import_busybox(&self) {
        let root = self.dir.path().join("rootfs");
        std::fs::create_dir_all(root.join("bin")).unwrap();
        for dir in ["tmp", "workspace", "etc", "proc", "dev", "sys"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::copy("/bin/busybox", root.join("bin/busybox")).unwrap();
        // Relative links: `busybox --install` would point them at this machine's path.
        let applets = Command::new("/bin/busybox").arg("--list").output().unwrap();
        for applet in String::from_utf8_lossy(&applets.stdout).split_whitespace() {
            let _ = std::os::unix::fs::symlink("busybox", root.join("bin").join(applet));
        }
        let mut tar = Command::new("tar")
            .arg("-C")
            .arg(&root)
            .args(["-c", "."])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let import = Command::new("docker")
            .arg("-H")
            .arg(format!("unix://{}", self.socket().display()))
            .args(["import", "-", IMAGE])
            .stdin(tar.stdout.take().unwrap())
            .output()
            .unwrap();
        let _ = tar.wait();
        assert!(
            import.status.success(),
            "docker import: {}",
            String::from_utf8_lossy(&import.stderr)
        );
    }

    /// `name session state` of every container labelled as hermes'.
    pub fn containers(&self) -> Vec<String> {
        let out = self.cli(&[
            "ps",
            "-a",
            "--filter",
            "label=hermes.instance",
            "--format",
            "{{.Names}} {{.State}}",
        ]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        let ids = self.cli(&["ps", "-aq"]);
        for id in String::from_utf8_lossy(&ids.stdout).split_whitespace() {
            let _ = self.cli(&["rm", "-f", id]);
        }
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Mounts dockerd left under the data root would keep the directory from going away.
        let _ = Command::new("umount")
            .args(["-R", "-l"])
            .arg(self.dir.path().join("exec"))
            .status();
    }
}
