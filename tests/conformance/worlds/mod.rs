//! Each platform's world, as [`crate::world::Platform`] implementations.

pub mod discord;
pub mod email;
pub mod matrix;
pub mod slack;
pub mod telegram;
