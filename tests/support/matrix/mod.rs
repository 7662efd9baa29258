//! Matrix: a daemon with Matrix alone against the real Synapse that `.ci/synapse` starts on
//! 127.0.0.1 (`synapse`), people as real matrix-sdk clients (`person`), and the world tests
//! drive (`world`).
//!
//! Each world registers its own fresh users (bot, alice, bob, mallory) through the open
//! registration API, so tests run in parallel on one Synapse without seeing each other.
//!
//! Not part of `support/mod.rs`: the test binary loads it as `matrix_support` (`#[path]`) only
//! where the Matrix adapter is built, and the benches never do.
//!
//! Locally: `.ci/synapse` (installs Synapse from PyPI into a venv on first use), then
//! `cargo nextest run -E 'test(/^matrix_/)'`.

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
