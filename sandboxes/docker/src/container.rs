//! `ensure`: the session's container, created and started on first use, restarted when it
//! stopped, replaced when its settings changed or it cannot start.

use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum};
use bollard::query_parameters::CreateContainerOptionsBuilder;

use crate::error::status_of;
use crate::spec::{self, ContainerSpec, LABEL_SPEC};
use crate::{Docker, DockerError};

/// How often `ensure` goes round after replacing a container (settings changed, start failed).
const ATTEMPTS: usize = 3;
/// How often it looks again after another process won the name: dockerd reserves a name before
/// the container can be inspected under it, so the winner's container may take a moment to show.
const CONFLICT_RETRIES: usize = 50;
/// The pause between two such looks.
const CONFLICT_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

impl Docker {
    /// The session's container id: the one named `spec.name` if it runs with these settings,
    /// else it is started (when stopped), replaced (when its settings differ or it will not
    /// start) or created. Idempotent; concurrent calls for one name create it once (a lock here,
    /// and dockerd's name conflict across processes). No image is ever pulled.
    pub async fn ensure(&self, spec: &ContainerSpec) -> Result<String, DockerError> {
        spec::validate(spec)?;
        let user = spec::workspace_user(&spec.workspace)?;
        let wanted = spec::fingerprint(spec, &user);
        let lock = self.lock_for(&spec.name);
        let _held = lock.lock().await;

        let mut last_error = None;
        let (mut attempts, mut conflicts) = (0, 0);
        while attempts < ATTEMPTS && conflicts < CONFLICT_RETRIES {
            let Some(found) = self.inspect(&spec.name).await? else {
                match self.create(spec, &user).await? {
                    Some(id) => return Ok(id),
                    None => {
                        // Created meanwhile by another process: look again shortly.
                        conflicts += 1;
                        tokio::time::sleep(CONFLICT_PAUSE).await;
                        continue;
                    }
                }
            };
            attempts += 1;
            let id = found.id.clone().unwrap_or_else(|| spec.name.clone());
            let fingerprint = found
                .config
                .as_ref()
                .and_then(|c| c.labels.as_ref())
                .and_then(|l| l.get(LABEL_SPEC));
            if fingerprint != Some(&wanted) {
                tracing::info!(container = %spec.name, "settings changed: replacing the container");
                self.remove(&id).await?;
                continue;
            }
            let state = found.state.as_ref().and_then(|s| s.status);
            match state {
                Some(ContainerStateStatusEnum::RUNNING) => return Ok(id),
                Some(ContainerStateStatusEnum::PAUSED) => {
                    if let Err(e) = self.api.unpause_container(&id).await {
                        last_error = Some(DockerError::api(format!("unpause {}", spec.name), e));
                        self.remove(&id).await?;
                    }
                }
                _ => match self.api.start_container(&id, None).await {
                    Ok(()) => {
                        tracing::info!(container = %spec.name, "stopped container started again");
                        return Ok(id);
                    }
                    Err(e) => {
                        tracing::warn!(container = %spec.name, error = %e, "restart failed: replacing");
                        last_error = Some(DockerError::api(format!("start {}", spec.name), e));
                        self.remove(&id).await?;
                    }
                },
            }
        }
        Err(last_error.unwrap_or_else(|| DockerError::Invalid {
            what: "container",
            reason: format!(
                "{} kept changing while it was being set up; try again",
                spec.name
            ),
        }))
    }

    /// The container named or numbered `id_or_name`, or `None` if there is none.
    pub(crate) async fn inspect(
        &self,
        id_or_name: &str,
    ) -> Result<Option<ContainerInspectResponse>, DockerError> {
        match self.api.inspect_container(id_or_name, None).await {
            Ok(found) => Ok(Some(found)),
            Err(e) if status_of(&e) == Some(404) => Ok(None),
            Err(e) => Err(DockerError::api(
                format!("inspect the container {id_or_name}"),
                e,
            )),
        }
    }

    /// Creates and starts the container; `None` if another process created that name first.
    async fn create(
        &self,
        spec: &ContainerSpec,
        user: &str,
    ) -> Result<Option<String>, DockerError> {
        if !self.has_image(&spec.image).await? {
            return Err(DockerError::MissingImage {
                image: spec.image.clone(),
            });
        }
        let options = CreateContainerOptionsBuilder::new()
            .name(&spec.name)
            .build();
        let created = match self
            .api
            .create_container(Some(options), spec::create_body(spec, user))
            .await
        {
            Ok(created) => created,
            Err(e) if status_of(&e) == Some(409) => return Ok(None),
            Err(e) => {
                return Err(DockerError::api(
                    format!("create the container {}", spec.name),
                    e,
                ));
            }
        };
        if let Err(e) = self.api.start_container(&created.id, None).await {
            // A container that cannot start is useless; do not leave it for the next call.
            let _ = self.remove(&created.id).await;
            return Err(DockerError::api(
                format!("start the container {}", spec.name),
                e,
            ));
        }
        tracing::info!(container = %spec.name, session = %spec.session, "container created");
        Ok(Some(created.id))
    }
}
