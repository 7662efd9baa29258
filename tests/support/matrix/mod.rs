//! Matrix: a daemon with Matrix alone against the real Synapse that `.ci/synapse` starts on
//! 127.0.0.1 (`synapse`), people as real matrix-sdk clients (`person`), and the world tests
//! drive (`world`).
//!
//! Each world registers its own fresh users (bot, alice, bob, mallory) through the open
//! registration API, so tests run in parallel on one Synapse without seeing each other.
//!
//! Not part of `support/mod.rs`: only the Matrix tests load it (`#[path]`), so the other test
//! binaries do not compile matrix-sdk code, nor need its recursion limit.
//!
//! Locally: `.ci/synapse` (installs Synapse from PyPI into a venv on first use), then
//! `cargo nextest run --test matrix_conversation --test matrix_delivery`.

#![allow(dead_code)]

mod person;
mod synapse;
mod world;

// Each test binary uses only some of these.
#[allow(unused_imports)]
pub use person::{Person, Seen};
#[allow(unused_imports)]
pub use synapse::{ENV_FILE, PASSWORD, Synapse};
#[allow(unused_imports)]
pub use world::MatrixWorld;
