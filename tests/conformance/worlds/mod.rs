//! Each platform's world, as [`crate::conformance::world::Platform`] implementations.

pub mod discord;
pub mod email;
pub mod matrix;
pub mod slack;
pub mod telegram;
