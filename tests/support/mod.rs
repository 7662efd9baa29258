//! Test support: fakes of the services hermes talks to, on 127.0.0.1, and a harness that runs
//! the real `hermes` binary against them. One folder per platform (its fake, its wire format,
//! the world a test drives); shared pieces beside them.
//!
//! Matrix (`matrix/`) is not declared here: its tests load it with `#[path]`, so that the other
//! test binaries do not compile matrix-sdk code.
#![allow(dead_code)]

pub mod chat;
pub mod cost;
pub mod daemon;
pub mod discord;
pub mod dockerd;
pub mod email;
pub mod http;
pub mod llm;
pub mod mcp;
pub mod nginx;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod proxy;
pub mod sandboxed;
pub mod slack;
pub mod sshd;
pub mod telegram;
pub mod wait;

// Each test binary uses only some of these.
#[allow(unused_imports)]
pub use chat::Buttons;
#[allow(unused_imports)]
pub use wait::{LONG_WAIT, WAIT, wait_for};
