//! The Synapse `.ci/synapse` runs on 127.0.0.1 (or a private one a test starts and stops): its
//! settings, and registering fresh users.

use std::collections::HashMap;
use std::path::PathBuf;

use matrix_sdk::ruma::OwnedUserId;
use serde_json::Value;

/// Where `.ci/synapse` writes its settings.
pub const ENV_FILE: &str = "/tmp/hermes-synapse/env";

/// A running Synapse.
#[derive(Debug, Clone)]
pub struct Synapse {
    pub url: String,
    pub port: u16,
    pub data: PathBuf,
    /// `.ci/synapse`, to start a private instance.
    pub script: PathBuf,
}

impl Synapse {
    /// The shared instance; panics with instructions when it is not running.
    pub fn get() -> Synapse {
        let path = std::env::var("MATRIX_TEST_ENV").unwrap_or_else(|_| ENV_FILE.to_owned());
        let s = Synapse::from_env_file(&path);
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", s.port)).is_ok(),
            "Synapse is not answering on 127.0.0.1:{}: run `.ci/synapse` (.ci/run does it)",
            s.port
        );
        s
    }

    fn from_env_file(path: &str) -> Synapse {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
            panic!(
                "Synapse not running ({path}: {e}): start it with `.ci/synapse` (installs it into a venv on first use; .ci/run does it)"
            )
        });
        let vars: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        Synapse {
            url: vars["MATRIX_TEST_HOMESERVER"].to_owned(),
            port: vars["MATRIX_TEST_PORT"].parse().expect("port"),
            data: PathBuf::from(vars["MATRIX_TEST_DATA"]),
            script: PathBuf::from(vars["MATRIX_TEST_SCRIPT"]),
        }
    }

    /// Start a private Synapse in `data` on `port` (or restart it, keeping its database).
    pub fn start_private(script: &std::path::Path, data: &std::path::Path, port: u16) -> Synapse {
        let out = std::process::Command::new(script)
            .arg("start")
            .arg(data)
            .arg(port.to_string())
            .output()
            .expect("run .ci/synapse");
        assert!(
            out.status.success(),
            ".ci/synapse start failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Synapse::from_env_file(&data.join("env").display().to_string())
    }

    /// Stop a private Synapse started with [`start_private`](Self::start_private).
    pub fn stop_private(&self) {
        let _ = std::process::Command::new(&self.script)
            .arg("stop")
            .arg(&self.data)
            .output();
    }

    /// Register a fresh user; returns its full user id (password: `secret-pw`).
    pub async fn register(&self, localpart: &str) -> OwnedUserId {
        let http = reqwest::Client::new();
        let r = http
            .post(format!("{}/_matrix/client/v3/register", self.url))
            .json(&serde_json::json!({
                "username": localpart,
                "password": PASSWORD,
                "auth": {"type": "m.login.dummy"},
                "inhibit_login": true,
            }))
            .send()
            .await
            .expect("register");
        let status = r.status();
        let body: Value = r.json().await.unwrap_or_default();
        assert!(status.is_success(), "register {localpart}: {status} {body}");
        body["user_id"]
            .as_str()
            .expect("user_id")
            .try_into()
            .expect("user id")
    }
}

pub const PASSWORD: &str = "secret-pw";
