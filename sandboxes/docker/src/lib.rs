//! Docker sandbox for the hermes terminal tool: one locked-down container per session, driven
//! through dockerd's API with [bollard](https://docs.rs/bollard).
//!
//! A session's container is made on first use by [`Docker::ensure`] from a [`ContainerSpec`]:
//! network mode `none`, read-only root, a private `/tmp`, the person's workspace the only
//! writable host directory, all capabilities dropped, `no-new-privileges`, and limits on
//! processes, memory and CPU. [`Docker::exec`] runs one command there with a timeout, a
//! cancellation token and an output cap, and when the command ends, however it ends, kills every
//! process it left behind, so nothing a call starts (`setsid`, `nohup … &`, a double fork)
//! outlives it. Containers carry the daemon instance and session in labels, so [`Docker::list`]
//! shows them and [`Docker::reap`] clears what a crash left.
//!
//! No image is ever pulled: the configured image must be on the machine already.

#![warn(missing_docs)]

mod client;
mod container;
mod error;
mod exec;
mod leftovers;
mod output;
mod spec;

pub use client::{ContainerInfo, Docker};
pub use error::DockerError;
pub use exec::{ExecCall, ExecOutcome};
pub use spec::{ContainerSpec, LABEL_INSTANCE, LABEL_SESSION, container_name};
