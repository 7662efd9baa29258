//! The policy matrix: levels × categories -> decisions, with configured overrides.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::Category;

/// How much a session lets the agent do without asking, from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Confirm every tool call.
    Safe,
    /// Reads and writes run; system and finance calls are confirmed.
    Auto,
    /// Everything runs without asking.
    FullAccess,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Safe, Level::Auto, Level::FullAccess];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Safe => "safe",
            Level::Auto => "auto",
            Level::FullAccess => "full-access",
        }
    }

    pub fn parse(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| {
            l.as_str().eq_ignore_ascii_case(s.trim())
                || (s.trim().eq_ignore_ascii_case("full") && *l == Level::FullAccess)
        })
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens to a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Auto,
    Confirm,
    Deny,
}

/// The matrix with its overrides.
#[derive(Debug, Clone)]
pub struct PolicyMatrix {
    cells: HashMap<(Level, Category), Decision>,
    tools: HashMap<String, Decision>,
}

impl Default for PolicyMatrix {
    fn default() -> Self {
        use Category::*;
        use Decision::*;
        let mut cells = HashMap::new();
        for category in [Read, Write, System, Finance] {
            cells.insert((Level::Safe, category), Confirm);
            cells.insert((Level::FullAccess, category), Auto);
        }
        cells.insert((Level::Auto, Read), Auto);
        cells.insert((Level::Auto, Write), Auto);
        cells.insert((Level::Auto, System), Confirm);
        cells.insert((Level::Auto, Finance), Confirm);
        PolicyMatrix {
            cells,
            tools: HashMap::new(),
        }
    }
}

impl PolicyMatrix {
    /// The default matrix with configured cell overrides and per-tool overrides.
    pub fn with_overrides(
        cells: &HashMap<Level, HashMap<Category, Decision>>,
        tools: &HashMap<String, Decision>,
    ) -> Self {
        let mut m = PolicyMatrix::default();
        for (level, row) in cells {
            for (category, decision) in row {
                m.cells.insert((*level, *category), *decision);
            }
        }
        m.tools = tools.clone();
        m
    }

    /// The decision for a call of `tool` (of `category`) at `level`. `dangerous` calls are
    /// confirmed below full-access even where the matrix says auto; `granted` (the user allowed
    /// this tool for the session or always) turns a confirmation into auto, except for
    /// dangerous calls. A `deny` from configuration always wins.
    pub fn decide(
        &self,
        level: Level,
        tool: &str,
        category: Category,
        dangerous: bool,
        granted: bool,
    ) -> Decision {
        let base = self.tool_override(tool).unwrap_or_else(|| {
            self.cells
                .get(&(level, category))
                .copied()
                .unwrap_or(Decision::Confirm)
        });
        match base {
            Decision::Deny => Decision::Deny,
            _ if dangerous && level != Level::FullAccess => Decision::Confirm,
            Decision::Confirm if granted && !dangerous => Decision::Auto,
            other => other,
        }
    }

    /// The override for `tool`: its own, or for an MCP tool (`mcp_<server>_<tool>`) the one of
    /// its server (`mcp_<server>`), the longest name that matches.
    fn tool_override(&self, tool: &str) -> Option<Decision> {
        if let Some(d) = self.tools.get(tool) {
            return Some(*d);
        }
        if !tool.starts_with("mcp_") {
            return None;
        }
        self.tools
            .iter()
            .filter(|(k, _)| {
                k.starts_with("mcp_")
                    && tool.len() > k.len()
                    && tool.starts_with(k.as_str())
                    && tool.as_bytes()[k.len()] == b'_'
            })
            .max_by_key(|(k, _)| k.len())
            .map(|(_, d)| *d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Category::*;
    use Decision::*;

    #[test]
    fn every_cell_of_the_default_matrix() {
        let m = PolicyMatrix::default();
        let table = [
            (Level::Safe, [Confirm, Confirm, Confirm, Confirm]),
            (Level::Auto, [Auto, Auto, Confirm, Confirm]),
            (Level::FullAccess, [Auto, Auto, Auto, Auto]),
        ];
        for (level, row) in table {
            for (category, expected) in [Read, Write, System, Finance].into_iter().zip(row) {
                assert_eq!(
                    m.decide(level, "t", category, false, false),
                    expected,
                    "{level} × {category:?}"
                );
            }
        }
    }

    #[test]
    fn an_mcp_server_override_covers_its_tools_and_a_tool_override_wins() {
        let tools = HashMap::from([
            ("mcp_gh".to_owned(), Deny),
            ("mcp_gh_read".to_owned(), Auto),
        ]);
        let m = PolicyMatrix::with_overrides(&HashMap::new(), &tools);
        let d = |tool: &str| m.decide(Level::Auto, tool, Read, false, false);
        assert_eq!(d("mcp_gh_delete"), Deny);
        assert_eq!(d("mcp_gh_read"), Auto);
        // `mcp_gh` is not the server of `mcp_ghost_x`.
        assert_eq!(d("mcp_ghost_x"), Auto);
    }

    #[test]
    fn deny_overrides_a_cell_and_a_single_tool() {
        let cells = HashMap::from([(Level::FullAccess, HashMap::from([(System, Deny)]))]);
        let tools = HashMap::from([
            ("web_fetch".to_owned(), Deny),
            ("terminal".to_owned(), Auto),
        ]);
        let m = PolicyMatrix::with_overrides(&cells, &tools);
        assert_eq!(
            m.decide(Level::FullAccess, "other", System, false, false),
            Deny
        );
        assert_eq!(
            m.decide(Level::FullAccess, "other", Read, false, false),
            Auto
        );
        assert_eq!(
            m.decide(Level::FullAccess, "web_fetch", Read, false, false),
            Deny
        );
        assert_eq!(
            m.decide(Level::Auto, "web_fetch", Read, false, true),
            Deny,
            "a grant never beats deny"
        );
        // A tool override of auto still confirms dangerous calls below full-access.
        assert_eq!(
            m.decide(Level::Safe, "terminal", System, false, false),
            Auto
        );
        assert_eq!(
            m.decide(Level::Safe, "terminal", System, true, false),
            Confirm
        );
    }

    #[test]
    fn dangerous_calls_are_confirmed_below_full_access_and_grants_do_not_cover_them() {
        let m = PolicyMatrix::default();
        assert_eq!(
            m.decide(Level::Auto, "patch_file", Write, true, false),
            Confirm
        );
        assert_eq!(
            m.decide(Level::Auto, "terminal", System, true, true),
            Confirm
        );
        assert_eq!(
            m.decide(Level::FullAccess, "terminal", System, true, false),
            Auto
        );
        assert_eq!(
            m.decide(Level::Auto, "terminal", System, false, true),
            Auto,
            "granted"
        );
        assert_eq!(
            m.decide(Level::Safe, "read_file", Read, false, true),
            Auto,
            "granted"
        );
    }

    #[test]
    fn levels_parse_from_chat_input() {
        assert_eq!(Level::parse("Full-Access"), Some(Level::FullAccess));
        assert_eq!(Level::parse("full"), Some(Level::FullAccess));
        assert_eq!(Level::parse(" safe "), Some(Level::Safe));
        assert_eq!(Level::parse("yolo"), None);
    }
}
