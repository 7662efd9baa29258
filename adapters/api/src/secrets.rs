//! The process-wide list of secrets to scrub: every credential the daemon loads from its
//! configuration, and every one an adapter obtains at run time (a Matrix access token from a
//! login), registered once and replaced by `***` in log lines, tool output, replies and errors.
//!
//! It lives in the contract crate so that adapters, which never import the core, can register
//! what they learn.

use std::sync::RwLock;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Values shorter than this are not registered: they would mangle ordinary words.
const MIN_LEN: usize = 6;

/// Never show `secret` from now on.
pub fn register_secret(secret: &str) {
    let secret = secret.trim();
    if secret.len() < MIN_LEN {
        return;
    }
    if let Ok(mut all) = SECRETS.write()
        && !all.iter().any(|s| s == secret)
    {
        all.push(secret.to_owned());
    }
}

/// `text` with every registered secret replaced by `***`.
pub fn scrub(text: &str) -> String {
    let Ok(all) = SECRETS.read() else {
        return text.to_owned();
    };
    let mut out = text.to_owned();
    for s in all.iter() {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "***");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_secrets_are_scrubbed_and_short_ones_ignored() {
        register_secret("  runtime-token-42 ");
        register_secret("abc");
        assert_eq!(
            scrub("Bearer runtime-token-42 for abc"),
            "Bearer *** for abc"
        );
    }
}
