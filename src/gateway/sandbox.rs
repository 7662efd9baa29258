//! The terminal sandbox's life beside the sessions: a session's container is removed when its
//! lane retires, this daemon's containers are reaped at start (a crash leaves them) and at stop
//! (where the SSH master connection is closed too), and `hermes status` lists them. Backends
//! without per-session state need none of this.

use hermes_adapter::SessionKey;

use crate::gateway::Shared;

/// A session went idle: free what its sandbox holds (its container).
pub fn session_ended(shared: &Shared, key: &SessionKey) {
    #[cfg(feature = "docker")]
    if let Some(crate::tools::terminal::SandboxResolved::Docker(docker)) = shared.agent().sandbox()
    {
        let docker = docker.clone();
        let key = key.clone();
        tokio::spawn(async move { docker.release(&key).await });
    }
    #[cfg(not(feature = "docker"))]
    let _ = (shared, key);
}

/// Remove every container of this daemon (`when` says why, for the log).
pub async fn reap(shared: &Shared, when: &str) {
    #[cfg(feature = "docker")]
    if let Some(crate::tools::terminal::SandboxResolved::Docker(docker)) = shared.agent().sandbox()
    {
        let removed = docker.reap().await;
        if removed > 0 {
            tracing::info!(removed, "docker: containers of this daemon removed {when}");
        }
    }
    #[cfg(not(feature = "docker"))]
    let _ = (shared, when);
}

/// At stop: remove the containers and close the SSH master connection.
pub async fn stop(shared: &Shared) {
    reap(shared, "at stop").await;
    if let Some(crate::tools::terminal::SandboxResolved::Ssh(ssh)) = shared.agent().sandbox() {
        ssh.close().await;
    }
}

/// One line on where the terminal runs, and the sandbox's containers (`name session state`).
pub async fn report(shared: &Shared) -> (Option<String>, Vec<String>) {
    let agent = shared.agent();
    let Some(resolved) = agent.sandbox() else {
        return (None, Vec::new());
    };
    let config = &shared.config().tools.sandbox;
    let line = crate::tools::terminal::describe_sandbox(resolved, config);
    #[cfg(feature = "docker")]
    if let crate::tools::terminal::SandboxResolved::Docker(docker) = resolved {
        // A slow dockerd must not hold up the status (systemd's watchdog reads it too).
        let listed = tokio::time::timeout(std::time::Duration::from_secs(2), docker.containers());
        let containers = listed
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|c| format!("{} {} {}", c.name, c.session, c.state))
            .collect();
        return (Some(line), containers);
    }
    (Some(line), Vec::new())
}
