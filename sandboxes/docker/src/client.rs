//! The connection to dockerd and the calls that need no container of their own: images, listing,
//! removal and the reaping of what a crashed daemon left behind.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bollard::query_parameters::{ListContainersOptionsBuilder, RemoveContainerOptionsBuilder};

use crate::DockerError;
use crate::error::status_of;
use crate::spec::{LABEL_INSTANCE, LABEL_SESSION};

/// Seconds bollard waits for dockerd's answer to one request (not for a command's output).
const REQUEST_TIMEOUT_SECS: u64 = 120;

/// A connection to dockerd.
///
/// Cheap to share behind an `Arc`; every method takes `&self`. Calls for one container are
/// serialized where they must be: two `ensure` calls for one name never both create, and two
/// `exec` calls in one container run one after the other (the end-of-call kill would otherwise
/// take the other call's processes).
pub struct Docker {
    pub(crate) api: bollard::Docker,
    endpoint: String,
    /// One lock per container name (for `ensure`) and per container id (for `exec`).
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A container of this daemon instance, as [`Docker::list`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerInfo {
    /// The container id.
    pub id: String,
    /// Its name, without Docker's leading `/`.
    pub name: String,
    /// The session key string from its `hermes.session` label.
    pub session: String,
    /// Docker's state: `running`, `exited`, `created`, …
    pub state: String,
}

impl Docker {
    /// Connects to `socket` (a path like `/run/docker.sock`), or with `None` to `DOCKER_HOST`
    /// when it names a unix socket, else `/var/run/docker.sock`; then agrees on an API version
    /// and pings, so an unusable daemon is reported here and not at the first command.
    pub async fn connect(socket: Option<&Path>) -> Result<Self, DockerError> {
        let endpoint = match socket {
            Some(path) => path.display().to_string(),
            None => std::env::var("DOCKER_HOST")
                .ok()
                .filter(|host| host.starts_with("unix://"))
                .unwrap_or_else(|| "/var/run/docker.sock".to_owned()),
        };
        let unreachable = |source| DockerError::Unreachable {
            endpoint: endpoint.clone(),
            source,
        };
        let api = match socket {
            Some(path) => bollard::Docker::connect_with_unix(
                &path.to_string_lossy(),
                REQUEST_TIMEOUT_SECS,
                bollard::API_DEFAULT_VERSION,
            ),
            None => bollard::Docker::connect_with_local_defaults(),
        }
        .map_err(unreachable)?;
        // Older daemons (Debian's 20.10 speaks API 1.41) refuse a newer client version.
        let api = api.negotiate_version().await.map_err(unreachable)?;
        api.ping().await.map_err(unreachable)?;
        tracing::debug!(%endpoint, version = ?api.client_version(), "connected to dockerd");
        Ok(Docker {
            api,
            endpoint,
            locks: Mutex::new(HashMap::new()),
        })
    }

    /// The socket this connection talks to, for messages and `hermes doctor`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Whether `image` is on this machine. Nothing is ever pulled: [`Docker::ensure`] refuses a
    /// missing image with [`DockerError::MissingImage`], which says how to get it.
    pub async fn has_image(&self, image: &str) -> Result<bool, DockerError> {
        match self.api.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(e) if status_of(&e) == Some(404) => Ok(false),
            Err(e) => Err(DockerError::api(format!("look up the image {image}"), e)),
        }
    }

    /// Stops and removes a container (forcibly, with its anonymous volumes); a container that is
    /// already gone is not an error.
    pub async fn remove(&self, id_or_name: &str) -> Result<(), DockerError> {
        let options = RemoveContainerOptionsBuilder::new()
            .force(true)
            .v(true)
            .build();
        match self.api.remove_container(id_or_name, Some(options)).await {
            Ok(()) => {}
            Err(e) if status_of(&e) == Some(404) => {}
            Err(e) => {
                return Err(DockerError::api(
                    format!("remove the container {id_or_name}"),
                    e,
                ));
            }
        }
        self.locks
            .lock()
            .expect("lock map poisoned")
            .remove(id_or_name);
        tracing::debug!(container = id_or_name, "container removed");
        Ok(())
    }

    /// The containers labelled `hermes.instance=<instance>`, running or not.
    pub async fn list(&self, instance: &str) -> Result<Vec<ContainerInfo>, DockerError> {
        let filters = HashMap::from([("label", vec![format!("{LABEL_INSTANCE}={instance}")])]);
        let options = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let found = self
            .api
            .list_containers(Some(options))
            .await
            .map_err(|e| DockerError::api("list the containers", e))?;
        Ok(found
            .into_iter()
            .map(|c| ContainerInfo {
                id: c.id.unwrap_or_default(),
                name: c
                    .names
                    .and_then(|names| names.into_iter().next())
                    .map(|n| n.trim_start_matches('/').to_owned())
                    .unwrap_or_default(),
                session: c
                    .labels
                    .and_then(|mut labels| labels.remove(LABEL_SESSION))
                    .unwrap_or_default(),
                state: c.state.map(|s| s.to_string()).unwrap_or_default(),
            })
            .collect())
    }

    /// Removes every container of `instance`, as at start after a crash; returns how many.
    pub async fn reap(&self, instance: &str) -> Result<usize, DockerError> {
        let found = self.list(instance).await?;
        for container in &found {
            self.remove(&container.id).await?;
        }
        if !found.is_empty() {
            tracing::info!(instance, count = found.len(), "reaped leftover containers");
        }
        Ok(found.len())
    }

    /// The lock serializing work on one container name or id.
    pub(crate) fn lock_for(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().expect("lock map poisoned");
        locks.entry(key.to_owned()).or_default().clone()
    }
}
