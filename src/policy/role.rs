//! [`Role`]: who a person is to the daemon. Operators run it (named in `[access]` or a platform's
//! `operators`); users are the people it serves. Only an operator raises a permission level above
//! `policy.max_level`, moves home channels, changes shared skills or uses admin commands.

use serde::{Deserialize, Serialize};

/// A person's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Served, within the limits the operators set.
    User,
    /// Runs the daemon: the terminal, the command line, and the people named as operators.
    Operator,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Operator => "operator",
        }
    }

    pub fn is_operator(self) -> bool {
        self == Role::Operator
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a user is told when they try an operator's action.
pub const OPERATORS_ONLY: &str = "🔒 Only an operator can do that.";
