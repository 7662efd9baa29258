//! The errors of the Docker backend, worded for the model and the operator who read them.

use std::path::PathBuf;

/// What went wrong talking to dockerd or running a command in a container.
///
/// Every message is one sentence that names what is wrong (the socket, the image, the container)
/// and, where there is one, the command that fixes it.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// dockerd did not answer at the endpoint: not running, wrong socket, or no permission.
    #[error("dockerd is not reachable at {endpoint}: {source}")]
    Unreachable {
        /// The socket path or `DOCKER_HOST` value that was tried.
        endpoint: String,
        /// What the client saw.
        #[source]
        source: bollard::errors::Error,
    },
    /// The image is not on this machine; hermes never pulls one implicitly.
    #[error(
        "the image {image:?} is not present on this machine and hermes never pulls one: \
         run `docker pull {image}` (or `docker import` a root filesystem as {image})"
    )]
    MissingImage {
        /// The image reference from the configuration.
        image: String,
    },
    /// The host directory to mount as the workspace is unusable.
    #[error("the workspace {} cannot be mounted: {reason}", path.display())]
    Workspace {
        /// The host directory.
        path: PathBuf,
        /// Why not (missing, not a directory, not absolute).
        reason: String,
    },
    /// A container spec or exec call that dockerd would refuse or misread.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// Which input (`container name`, `environment variable`, …).
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The container exists but is not running, so nothing can run in it; `ensure` starts it.
    #[error(
        "the container {container} is not running (state: {state}); ensure it again to restart it"
    )]
    NotRunning {
        /// Its id or name.
        container: String,
        /// Its state as dockerd reports it.
        state: String,
    },
    /// The container does not exist (removed, or reaped after a crash).
    #[error("no container {container}: it was removed; ensure it again to recreate it")]
    NoSuchContainer {
        /// Its id or name.
        container: String,
    },
    /// dockerd answered a request with an error.
    #[error("dockerd could not {action}: {}", describe(source))]
    Api {
        /// What was asked, e.g. `create the container hermes-x`.
        action: String,
        /// The client's error.
        #[source]
        source: bollard::errors::Error,
    },
}

impl DockerError {
    pub(crate) fn api(action: impl Into<String>, source: bollard::errors::Error) -> Self {
        DockerError::Api {
            action: action.into(),
            source,
        }
    }
}

/// dockerd's own message without the client's "Docker responded with status code" preamble.
fn describe(error: &bollard::errors::Error) -> String {
    match error {
        bollard::errors::Error::DockerResponseServerError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// The HTTP status of a dockerd error answer, if it was one.
pub(crate) fn status_of(error: &bollard::errors::Error) -> Option<u16> {
    match error {
        bollard::errors::Error::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}
