//! Email: a daemon with Email alone against the real Dovecot (IMAP + LMTP) and the SMTP front
//! that `.ci/mail-servers` starts on 127.0.0.1 (`servers`), and the world tests drive (`world`).
//!
//! Each world gets its own bot and correspondent mailboxes (Dovecot accepts any user name with
//! the password `secret`), so tests run in parallel without seeing each other's mail.
//!
//! Locally: `.ci/mail-servers` (as root; installs Dovecot and aiosmtpd on first use), then
//! `cargo nextest run -E 'test(/^email_/)'`.

mod servers;
mod world;

// Each test binary uses only some of these.
#[allow(unused_imports)]
pub use servers::{ENV_FILE, MailServers, body_text, header};
#[allow(unused_imports)]
pub use world::MailWorld;
