//! The end of every call: every process a command left in its container is killed.
//!
//! `kill -KILL -1`, run inside as the container's user, reaches every process there but the
//! caller and PID 1, in one pass of the kernel that a concurrent fork cannot slip past. PID 1 is
//! the reaping keeper loop (see `spec`), which survives it and reaps what it killed. Normally the
//! command's own wrapper runs [`KILL_SCRIPT`] (see `exec`); this module runs it in an exec of its
//! own when the wrapper could not, and restarts the container when even that cannot start.

use std::sync::Arc;
use std::time::Duration;

use bollard::container::LogOutput;
use bollard::exec::StartExecResults;
use bollard::models::ExecConfig;
use bollard::query_parameters::RestartContainerOptionsBuilder;
use futures_util::StreamExt;

use crate::DockerError;

/// How long the end-of-call kill may take before the container is restarted instead.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);
/// Counts the container's processes (PID 1, its sleep and this shell are the baseline), then
/// kills all but PID 1 and itself. Twice, for a process that was mid-fork on the first pass.
/// The count goes to stderr, which the command's own output never reaches (see `command_line`).
pub(crate) const KILL_SCRIPT: &str =
    "set -- /proc/[0-9]*; kill -KILL -1; kill -KILL -1; echo \"$#\" >&2";
/// Processes present when nothing was left behind: PID 1, its sleep, the killing shell.
pub(crate) const BASELINE_PROCESSES: usize = 3;

/// Kills every process in the container but PID 1; whether there were any to kill. Falls back
/// to restarting the container when no process can be started in it.
pub(crate) async fn kill_leftovers(api: &bollard::Docker, id: &str) -> Result<bool, DockerError> {
    let counted = tokio::time::timeout(KILL_TIMEOUT, run_kill_script(api, id)).await;
    match counted {
        Ok(Ok(Some(count))) => return Ok(count > BASELINE_PROCESSES),
        Ok(Ok(None)) => tracing::warn!(container = id, "kill script printed no count"),
        Ok(Err(e)) => tracing::warn!(container = id, error = %e, "kill script failed"),
        Err(_) => tracing::warn!(container = id, "kill script timed out"),
    }
    tracing::warn!(
        container = id,
        "restarting the container to end what the command left"
    );
    let options = RestartContainerOptionsBuilder::new().t(0).build();
    api.restart_container(id, Some(options))
        .await
        .map_err(|e| DockerError::api(format!("restart {id} to end a command's processes"), e))?;
    Ok(true)
}

/// Runs [`KILL_SCRIPT`]; the number of processes it saw, if it could run and say.
async fn run_kill_script(
    api: &bollard::Docker,
    id: &str,
) -> Result<Option<usize>, bollard::errors::Error> {
    let config = ExecConfig {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        cmd: Some(vec!["/bin/sh".into(), "-c".into(), KILL_SCRIPT.into()]),
        ..Default::default()
    };
    let exec_id = api.create_exec(id, config).await?.id;
    let StartExecResults::Attached { mut output, .. } = api.start_exec(&exec_id, None).await?
    else {
        return Ok(None);
    };
    let mut printed = Vec::new();
    while let Some(chunk) = output.next().await {
        if let LogOutput::StdErr { message } = chunk? {
            printed.extend_from_slice(&message);
        }
    }
    Ok(String::from_utf8_lossy(&printed).trim().parse().ok())
}

/// Kills a container's leftovers in a task if an `exec` future is dropped before it could,
/// under the container's lock, so the kill cannot hit a later call's processes.
pub(crate) struct CleanupGuard {
    pub(crate) api: Option<bollard::Docker>,
    pub(crate) id: String,
    pub(crate) lock: Arc<tokio::sync::Mutex<()>>,
}

impl CleanupGuard {
    /// The client back, for the caller to clean up itself.
    pub(crate) fn disarm(mut self) -> bollard::Docker {
        self.api.take().expect("guard disarmed once")
    }
}

impl Drop for CleanupGuard {
    fn drop(&mut self) {
        let Some(api) = self.api.take() else { return };
        let id = std::mem::take(&mut self.id);
        let lock = self.lock.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _held = lock.lock().await;
                if let Err(e) = kill_leftovers(&api, &id).await {
                    tracing::warn!(container = %id, error = %e, "cleanup after a dropped call failed");
                }
            });
        }
    }
}
