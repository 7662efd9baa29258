//! A real load balancer in front of several hermes processes: Debian's nginx on a free loopback
//! port, with its own configuration and directory, passing requests round-robin.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::http::free_port;

const NGINX: &str = "/usr/sbin/nginx";

/// nginx running until dropped.
pub struct Balancer {
    child: Child,
    dir: tempfile::TempDir,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl Balancer {
    /// Start nginx passing every request, round-robin, to `upstreams` (`host:port` each); a
    /// request an upstream refuses to connect goes to the next one, as in production.
    pub fn start(upstreams: &[String]) -> Balancer {
        assert!(
            Path::new(NGINX).exists(),
            "nginx is not installed: run .ci/test (it installs Debian's nginx), or apt-get install nginx"
        );
        let dir = tempfile::tempdir().expect("nginx directory");
        let port = free_port();
        let d = dir.path().display();
        let servers: String = upstreams
            .iter()
            .map(|u| format!("        server {u} max_fails=0;\n"))
            .collect();
        let conf = format!(
            "worker_processes 1;\n\
             pid {d}/nginx.pid;\n\
             error_log {d}/error.log;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n\
                 log_format upstream '$status $upstream_addr';\n\
                 access_log {d}/access.log upstream;\n\
                 client_body_temp_path {d}/body;\n\
                 proxy_temp_path {d}/proxy;\n\
                 fastcgi_temp_path {d}/fastcgi;\n\
                 uwsgi_temp_path {d}/uwsgi;\n\
                 scgi_temp_path {d}/scgi;\n\
                 upstream hermes {{\n{servers}    }}\n\
                 server {{\n\
                     listen 127.0.0.1:{port};\n\
                     location / {{ proxy_pass http://hermes; }}\n\
                 }}\n\
             }}\n"
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("write nginx.conf");
        let child = Command::new(NGINX)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let mut balancer = Balancer {
            child,
            dir,
            url: format!("http://127.0.0.1:{port}"),
        };
        balancer.wait_listening(port);
        balancer
    }

    fn wait_listening(&mut self, port: u16) {
        let deadline = Instant::now() + super::WAIT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("nginx exited ({status}): {}", self.error_log());
            }
            assert!(
                Instant::now() < deadline,
                "nginx never listened: {}",
                self.error_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    /// Per upstream (`host:port`), the requests it answered with each status, from nginx's
    /// access log (a request retried on another upstream counts for the one that answered).
    pub fn answered(&self) -> HashMap<String, HashMap<u16, usize>> {
        let log = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        let mut out: HashMap<String, HashMap<u16, usize>> = HashMap::new();
        for line in log.lines() {
            let mut parts = line.split_whitespace();
            let (Some(status), Some(last)) = (
                parts.next().and_then(|s| s.parse().ok()),
                line.rsplit([' ', ',']).next(),
            ) else {
                continue;
            };
            *out.entry(last.to_owned())
                .or_default()
                .entry(status)
                .or_default() += 1;
        }
        out
    }
}

impl Balancer {
    /// Requests `upstream` answered with `status` (all upstreams: `None`).
    pub fn count(&self, upstream: Option<&str>, status: u16) -> usize {
        self.answered()
            .iter()
            .filter(|(u, _)| upstream.is_none_or(|want| want == u.as_str()))
            .filter_map(|(_, by)| by.get(&status))
            .sum()
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        // SIGQUIT: nginx's graceful stop; its worker goes with it.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGQUIT) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
