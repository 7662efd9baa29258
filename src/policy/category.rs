//! [`Category`]: what a tool touches, the second axis of the permission matrix (users name it in
//! `[policy.matrix.<level>]`, every tool declares one).

/// What a tool touches; with the session's permission level it decides whether a call runs at
/// once, needs confirmation, or is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Read,
    Write,
    System,
    Finance,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Read => "read",
            Category::Write => "write",
            Category::System => "system",
            Category::Finance => "finance",
        }
    }
}
