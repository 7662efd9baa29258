//! The terminal in a Docker container per session (`tools.sandbox.backend = "docker"`), through
//! `hermes-docker`: the container is made on first use with the person's workspace mounted at
//! `/workspace`, removed when the session's lane goes idle or the daemon stops, and reaped at
//! start when a crash left it. Containers are labelled with this daemon's instance (a hash of
//! its state directory), so two daemons on one machine never touch each other's.

use std::path::Path;
use std::time::Duration;

use hermes_adapter::SessionKey;
use hermes_docker::{ContainerSpec, Docker, ExecCall, container_name};

use crate::config::SandboxConfig;
use crate::tools::ToolError;

/// Where the workspace appears inside a container.
pub const MOUNT_AT: &str = "/workspace";

/// The Docker backend: its settings and, once connected, the client.
pub struct DockerSandbox {
    pub config: SandboxConfig,
    /// The `hermes.instance` label of this daemon's containers.
    pub instance: String,
    client: tokio::sync::Mutex<Option<std::sync::Arc<Docker>>>,
}

/// One container of this daemon, for `hermes status`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ContainerStatus {
    pub name: String,
    pub session: String,
    pub state: String,
}

impl std::fmt::Debug for DockerSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerSandbox")
            .field("instance", &self.instance)
            .field("image", &self.config.docker.image)
            .finish_non_exhaustive()
    }
}

impl DockerSandbox {
    /// The backend of `config` for the daemon whose state directory is `home`.
    pub fn new(config: &SandboxConfig, home: &Path) -> Self {
        use sha2::Digest;
        let home = home.canonicalize().unwrap_or_else(|_| home.to_owned());
        let digest = sha2::Sha256::digest(home.as_os_str().as_encoded_bytes());
        DockerSandbox {
            config: config.clone(),
            instance: digest[..6].iter().map(|b| format!("{b:02x}")).collect(),
            client: tokio::sync::Mutex::new(None),
        }
    }

    /// The client, connecting (again) when there is none yet.
    pub async fn client(&self) -> Result<std::sync::Arc<Docker>, String> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let connected = Docker::connect(self.config.docker.socket.as_deref())
            .await
            .map_err(|e| e.to_string())?;
        let connected = std::sync::Arc::new(connected);
        *slot = Some(connected.clone());
        Ok(connected)
    }

    /// Whether dockerd answers and has the image (for `hermes doctor`).
    pub async fn check(&self) -> Result<(), String> {
        let client = self.client().await?;
        let image = &self.config.docker.image;
        match client.has_image(image).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!(
                "the image {image} is not on this machine (docker pull {image}, or docker import)"
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The container name of a session.
    pub fn name_of(&self, session: &SessionKey) -> String {
        container_name(&self.instance, &session.to_string())
    }

    /// Remove the container of a session that went idle (nothing when it has none).
    pub async fn release(&self, session: &SessionKey) {
        let Ok(client) = self.client().await else {
            return;
        };
        if let Err(e) = client.remove(&self.name_of(session)).await {
            tracing::warn!(%session, "docker: the session's container could not be removed: {e}");
        }
    }

    /// Remove every container of this daemon (at start after a crash, and at stop).
    pub async fn reap(&self) -> usize {
        match self.client().await {
            Ok(client) => client.reap(&self.instance).await.unwrap_or_else(|e| {
                tracing::warn!("docker: containers could not be reaped: {e}");
                0
            }),
            Err(e) => {
                tracing::warn!("docker: dockerd is not reachable: {e}");
                0
            }
        }
    }

    /// This daemon's containers now.
    pub async fn containers(&self) -> Vec<ContainerStatus> {
        let Ok(client) = self.client().await else {
            return Vec::new();
        };
        client
            .list(&self.instance)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|c| ContainerStatus {
                name: c.name,
                session: c.session,
                state: c.state,
            })
            .collect()
    }

    /// One line for the start-up log and `hermes doctor`.
    pub fn describe(&self) -> String {
        let c = &self.config;
        format!(
            "terminal sandbox: docker ({}), image {}, a container per session (instance {}), \
             network {}, {} MB, {} processes, {} CPUs",
            c.docker.socket.as_deref().map_or_else(
                || "DOCKER_HOST or the default socket".to_owned(),
                |p| p.display().to_string()
            ),
            c.docker.image,
            self.instance,
            if c.network { "on" } else { "off" },
            c.memory_mb,
            c.max_processes,
            c.docker.cpus
        )
    }
}

impl super::TerminalTool {
    /// Run `args` in the caller's session container, its workspace mounted at [`MOUNT_AT`].
    pub(super) async fn call_in_docker(
        &self,
        target: &DockerSandbox,
        args: &super::Args,
        timeout: Duration,
        ctx: &crate::tools::ToolContext,
    ) -> Result<String, ToolError> {
        use std::os::unix::process::ExitStatusExt;

        use super::process::{Ending, Finished};
        let workdir = super::ssh::relative_workdir(args.workdir.as_deref())
            .map_err(ToolError::InvalidArguments)?;
        let workspace = self.workspaces.open(ctx).await?;
        let client = target.client().await.map_err(|e| {
            ToolError::Failed(format!(
                "the terminal's Docker sandbox is not reachable ({e}); the command was not run"
            ))
        })?;
        let c = &target.config;
        let spec = ContainerSpec {
            name: target.name_of(&ctx.session),
            image: c.docker.image.clone(),
            instance: target.instance.clone(),
            session: ctx.session.to_string(),
            workspace: workspace.root().to_owned(),
            mount_at: MOUNT_AT.into(),
            network: c.network,
            memory_mb: c.memory_mb,
            pids: i64::try_from(c.max_processes).unwrap_or(i64::MAX),
            cpus: c.docker.cpus,
            max_file_mb: c.max_file_mb,
            cpu_secs: c.cpu_secs,
        };
        let id = client.ensure(&spec).await.map_err(|e| {
            ToolError::Failed(format!(
                "the session's container could not be started ({e}); the command was not run"
            ))
        })?;
        let env: Vec<(String, String)> = super::process::remote_env(&self.settings.env_allowlist)
            .into_iter()
            .chain([
                (
                    "PATH".to_owned(),
                    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned(),
                ),
                ("HOME".to_owned(), MOUNT_AT.to_owned()),
            ])
            .collect();
        let inside = if workdir == "." {
            MOUNT_AT.to_owned()
        } else {
            format!("{MOUNT_AT}/{workdir}")
        };
        let call = ExecCall {
            command: &args.command,
            workdir: &inside,
            env,
            timeout,
            max_output_bytes: self.settings.max_output_bytes,
        };
        let outcome = client.exec(&id, call, &ctx.cancel).await.map_err(|e| {
            ToolError::Failed(format!("the command could not run in its container: {e}"))
        })?;
        if outcome.cancelled {
            return Err(ToolError::Cancelled);
        }
        let ending = match (outcome.timed_out, outcome.exit_code) {
            (true, _) => Ending::TimedOut,
            (false, Some(code)) => Ending::Exited(std::process::ExitStatus::from_raw(
                ((code & 0xff) as i32) << 8,
            )),
            (false, None) => Ending::Exited(std::process::ExitStatus::from_raw(libc::SIGKILL)),
        };
        let finished = Finished {
            ending,
            output: outcome.output,
            stopped_leftovers: outcome.stopped_leftovers && !outcome.timed_out,
        };
        Ok(super::report(&finished, timeout))
    }
}
