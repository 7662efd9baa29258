//! Matrix adapter for hermes, on matrix-sdk with end-to-end encryption and its SQLite store.
//!
//! Receiving is a `/sync` loop driven here (`Client::sync_once`) rather than matrix-sdk's
//! `sync()` with event handlers, so that the sync token — Matrix's acknowledgement — moves past
//! a batch only after every message in it is stored in the inbox (or, when it cannot be
//! decrypted yet, saved for a later attempt). The token lives in our own file (see [`state`]);
//! matrix-sdk saves its own before any handler ran, so it is never used. A crash replays the last
//! batch, and the inbox drops what it already has (unique on the event id).
//!
//! The login is kept across restarts: the device id and access token are saved beside the
//! store, so the bot stays one device with one set of encryption keys. Encrypted rooms work like
//! any other: matrix-sdk decrypts during the sync, shares our room keys when we send, and events
//! whose key has not arrived yet are kept and decrypted again after later syncs.
//!
//! The homeserver URL is configurable (`matrix.homeserver`); plain `http://` works for loopback.
//!
//! Without the default `sdk` feature only the conversion of room events and the markdown renderer
//! are built (on ruma, without matrix-sdk): what the fuzz targets in `fuzz/` exercise.

#[cfg(feature = "sdk")]
mod adapter;
mod format;
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "sdk")]
mod gap;
mod inbound;
#[cfg(feature = "sdk")]
mod listener;
#[cfg(feature = "sdk")]
mod login;
#[cfg(feature = "sdk")]
mod outbound;
#[cfg(feature = "sdk")]
pub mod state;

#[cfg(feature = "sdk")]
pub use adapter::{Credentials, MAX_MESSAGE_LEN, MatrixAdapter, MatrixSettings};
