//! [`Secret`]: a string that never shows up in `Debug`, logs or error messages.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Whether an environment variable's name says it holds a credential (`*TOKEN*`, `*SECRET*`,
/// `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`, `*PRIVATE*`, `*KEY`).
pub fn names_a_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "PRIVATE",
    ]
    .iter()
    .any(|word| upper.contains(word))
        || upper.ends_with("KEY")
        // A database URL carries its password (`postgres://user:password@host/db`).
        || upper.ends_with("DATABASE_URL")
}

/// A credential (bot token, API key). `Debug` and `Display` print `***`; use [`Secret::expose`]
/// at the one place the value is handed to a client library.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.trim().is_empty()
    }

    /// Replace every occurrence of this secret in `text` with `***` (for error messages that
    /// echo URLs or request bodies).
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, "***")
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("Secret(<empty>)")
        } else {
            f.write_str("Secret(***)")
        }
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Serialized redacted: empty stays empty (so defaults compare), anything else is `***`.
impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(if self.0.is_empty() { "" } else { "***" })
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_do_not_print() {
        let s = Secret::new("123456:ABCdef");
        assert_eq!(format!("{s:?} {s}"), "Secret(***) ***");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"***\"");
        assert_eq!(
            s.scrub("GET /bot123456:ABCdef/getMe failed"),
            "GET /bot***/getMe failed"
        );
    }
}
