//! A private dockerd for the tests: started in a temp dir with its own socket and no network of
//! its own (no bridge, no iptables), a busybox image imported into it, and everything (containers,
//! the daemon, its files) gone when the last test using it drops it.
//!
//! A missing `dockerd` fails the tests with the command that installs it, unless
//! `HERMES_TESTS_NO_DOCKER=1` says to skip them.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use hermes_docker::{ContainerSpec, Docker, ExecCall, ExecOutcome, container_name};
use tokio_util::sync::CancellationToken;

/// The image every test container runs: Debian's static busybox and its applet links.
pub const IMAGE: &str = "hermes-test-busybox:latest";
/// The PATH commands get (the image's busybox applets live in /bin).
pub const PATH: &str = "/bin";

/// How long dockerd gets to answer its socket after starting.
const START_TIMEOUT: Duration = Duration::from_secs(30);

static SHARED: Mutex<Weak<Daemon>> = Mutex::new(Weak::new());

/// A running private dockerd.
pub struct Daemon {
    pub socket: PathBuf,
    child: Child,
    dir: tempfile::TempDir,
}

/// The shared daemon, started if none runs; `None` when the tests are told to skip Docker.
pub fn daemon() -> Option<Arc<Daemon>> {
    if std::env::var("HERMES_TESTS_NO_DOCKER").as_deref() == Ok("1") {
        eprintln!("HERMES_TESTS_NO_DOCKER=1: skipping a test that needs a real dockerd");
        return None;
    }
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(daemon) = shared.upgrade() {
        return Some(daemon);
    }
    let daemon = Arc::new(Daemon::start());
    *shared = Arc::downgrade(&daemon);
    Some(daemon)
}

/// The shared daemon and a client for it, or return from the test when Docker is skipped.
#[macro_export]
macro_rules! docker_or_skip {
    () => {
        match support::daemon() {
            Some(daemon) => {
                let docker = hermes_docker::Docker::connect(Some(&daemon.socket))
                    .await
                    .expect("connect to the test dockerd");
                (daemon, docker)
            }
            None => return,
        }
    };
}

impl Daemon {
    fn start() -> Daemon {
        let dockerd = find_dockerd().unwrap_or_else(|| {
            panic!(
                "dockerd is not installed, and these tests need a real one: \
                 run `apt-get install docker.io` (or set HERMES_TESTS_NO_DOCKER=1 to skip them)"
            )
        });
        let dir = tempfile::Builder::new()
            .prefix("hermes-dockerd.")
            .tempdir()
            .expect("temp dir for dockerd");
        let root = dir.path();
        let socket = root.join("docker.sock");
        let log = std::fs::File::create(root.join("dockerd.log")).expect("dockerd log");
        // No bridge and no iptables: this daemon has no network of its own, and containers
        // get network mode `none`. overlay2 works here, so no storage driver is forced.
        let child = Command::new(dockerd)
            .arg("--bridge=none")
            .arg("--iptables=false")
            .arg("--ip6tables=false")
            .arg("--data-root")
            .arg(root.join("data"))
            .arg("--exec-root")
            .arg(root.join("exec"))
            .arg("--pidfile")
            .arg(root.join("docker.pid"))
            .arg("-H")
            .arg(format!("unix://{}", socket.display()))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .expect("spawn dockerd");
        let mut daemon = Daemon { socket, child, dir };
        daemon.wait_until_ready();
        daemon.import_image();
        eprintln!("a private dockerd answers on {}", daemon.socket.display());
        daemon
    }

    /// A plain bollard client for this daemon, to inspect what the crate made.
    pub async fn api(&self) -> bollard::Docker {
        raw(&self.socket)
            .expect("bollard client")
            .negotiate_version()
            .await
            .expect("API version")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("dockerd.log")).unwrap_or_default()
    }

    fn wait_until_ready(&mut self) {
        let started = Instant::now();
        loop {
            if ping(&self.socket) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "dockerd exited at start ({status}); its log:\n{}",
                    self.log()
                );
            }
            if started.elapsed() > START_TIMEOUT {
                panic!(
                    "dockerd did not answer on {} within {START_TIMEOUT:?}; its log:\n{}",
                    self.socket.display(),
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `docker import` of a folder holding /bin/busybox and a link per applet.
    fn import_image(&self) {
        let rootfs = self.dir.path().join("rootfs");
        let bin = rootfs.join("bin");
        std::fs::create_dir_all(&bin).expect("rootfs/bin");
        for dir in ["tmp", "etc", "proc", "sys", "dev", "workspace"] {
            std::fs::create_dir_all(rootfs.join(dir)).expect("rootfs dir");
        }
        let busybox = Path::new("/bin/busybox");
        assert!(
            busybox.exists(),
            "the test image needs Debian's static busybox: run `apt-get install busybox-static`"
        );
        std::fs::copy(busybox, bin.join("busybox")).expect("copy busybox");
        let list = Command::new(busybox)
            .arg("--list")
            .output()
            .expect("busybox --list");
        for applet in String::from_utf8_lossy(&list.stdout).lines() {
            if applet != "busybox" {
                std::os::unix::fs::symlink("busybox", bin.join(applet)).expect("applet link");
            }
        }
        let tar = Command::new("tar")
            .arg("-C")
            .arg(&rootfs)
            .args(["-c", "."])
            .output()
            .expect("tar the rootfs");
        assert!(tar.status.success(), "tar failed: {tar:?}");
        let socket = self.socket.clone();
        on_own_runtime(move || async move {
            let api = bollard::Docker::connect_with_unix(
                &socket.to_string_lossy(),
                120,
                bollard::API_DEFAULT_VERSION,
            )?
            .negotiate_version()
            .await?;
            let (repo, tag) = IMAGE.split_once(':').expect("image has a tag");
            let options = bollard::query_parameters::CreateImageOptionsBuilder::new()
                .from_src("-")
                .repo(repo)
                .tag(tag)
                .build();
            let body = bollard::body_full(bytes::Bytes::from(tar.stdout));
            use futures_util::TryStreamExt;
            api.create_image(Some(options), Some(body), None)
                .try_collect::<Vec<_>>()
                .await?;
            Ok::<_, bollard::errors::Error>(())
        })
        .expect("import the busybox image");
    }

    /// Force-removes every container, so the daemon stops at once and leaves no mounts.
    fn remove_all_containers(&self) {
        let socket = self.socket.clone();
        let result = on_own_runtime(move || async move {
            let docker = Docker::connect(Some(&socket)).await?;
            let options = bollard::query_parameters::ListContainersOptionsBuilder::new()
                .all(true)
                .build();
            let all = raw(&socket)?.list_containers(Some(options)).await;
            for container in all.unwrap_or_default() {
                if let Some(id) = container.id {
                    docker.remove(&id).await?;
                }
            }
            Ok::<_, hermes_docker::DockerError>(())
        });
        if let Err(e) = result {
            eprintln!("could not remove the test containers: {e}");
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.remove_all_containers();
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("dockerd did not stop in 20 s; killing it");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bollard client of its own, for what the crate under test does not offer (inspecting,
/// listing everything).
pub fn raw(socket: &Path) -> Result<bollard::Docker, hermes_docker::DockerError> {
    bollard::Docker::connect_with_unix(&socket.to_string_lossy(), 120, bollard::API_DEFAULT_VERSION)
        .map_err(|source| hermes_docker::DockerError::Unreachable {
            endpoint: socket.display().to_string(),
            source,
        })
}

/// Runs an async job on a fresh runtime in its own thread, so it works from sync code and from
/// inside a test's runtime alike.
fn on_own_runtime<F, Fut, T>(job: F) -> T
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
    T: Send + 'static,
{
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(job())
    })
    .join()
    .expect("runtime thread")
}

/// Whether dockerd answers `GET /_ping` on `socket`.
fn ping(socket: &Path) -> bool {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200")
}

fn find_dockerd() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/bin".into(), "/sbin".into()])
        .map(|dir| dir.join("dockerd"))
        .find(|candidate| candidate.is_file())
}

/// A workspace dir and the spec of a container for it; `instance` keeps tests apart.
pub struct Session {
    pub spec: ContainerSpec,
    pub workspace: tempfile::TempDir,
}

impl Session {
    pub fn new(instance: &str, session: &str) -> Session {
        let workspace = tempfile::Builder::new()
            .prefix("hermes-ws.")
            .tempdir()
            .expect("workspace dir");
        let spec = ContainerSpec {
            name: container_name(instance, session),
            image: IMAGE.to_owned(),
            instance: instance.to_owned(),
            session: session.to_owned(),
            workspace: workspace.path().to_owned(),
            mount_at: "/workspace".to_owned(),
            network: false,
            memory_mb: 256,
            pids: 64,
            cpus: 1.0,
            max_file_mb: 1024,
            cpu_secs: 600,
        };
        Session { spec, workspace }
    }
}

/// `command` in `/workspace` with PATH only, 20 s and 64 KiB of output.
pub fn call(command: &str) -> ExecCall<'_> {
    ExecCall {
        command,
        workdir: "/workspace",
        env: vec![("PATH".to_owned(), PATH.to_owned())],
        timeout: Duration::from_secs(20),
        max_output_bytes: 64 * 1024,
    }
}

/// Runs `command` (see [`call`]) and returns how it went; panics if dockerd refused.
pub async fn run(docker: &Docker, id: &str, command: &str) -> ExecOutcome {
    docker
        .exec(id, call(command), &CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("exec {command:?}: {e}"))
}
