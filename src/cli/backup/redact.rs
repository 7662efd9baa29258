//! The configuration file as a backup keeps it: every secret value emptied, every comment and
//! the layout kept (toml_edit), so the restored file reads like the operator's own and the
//! credentials come from the environment (or are written in again).
//!
//! A string is a secret if its key names a credential the way environment variables do
//! (`bot_token`, `api_key`, `password`, `[mcp.servers.x.env] GITHUB_TOKEN`; a key ending in
//! `_env` names a variable and is kept), or if it holds one of the loaded configuration's secret
//! values (an MCP server's `Authorization` header, `store.url` with its password).

use toml_edit::{DocumentMut, Item, TableLike, Value};

/// What is written beside an emptied value.
const NOTE: &str = " # secret removed by hermes backup: set it here or in the environment";

/// The configuration's text with its secrets removed, and the dotted keys they were under.
#[derive(Debug, PartialEq)]
pub struct Redacted {
    pub text: String,
    pub keys: Vec<String>,
}

/// Remove the secrets from `text` (a TOML configuration), `secrets` being the values the
/// loaded configuration knows as secret (`Config::secrets`).
pub fn redact(text: &str, secrets: &[&str]) -> Result<Redacted, String> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| format!("the configuration is not valid TOML: {e}"))?;
    // Short values would match by accident (and `Secret::scrub` ignores them too).
    let secrets: Vec<&str> = secrets
        .iter()
        .copied()
        .filter(|s| s.trim().len() >= 4)
        .collect();
    let mut walk = Walk {
        secrets: &secrets,
        keys: Vec::new(),
    };
    walk.table(doc.as_table_mut(), "", true);
    Ok(Redacted {
        text: doc.to_string(),
        keys: walk.keys,
    })
}

struct Walk<'a> {
    secrets: &'a [&'a str],
    keys: Vec<String>,
}

impl Walk<'_> {
    fn is_secret(&self, key: &str, value: &str) -> bool {
        if value.is_empty() {
            return false;
        }
        let by_name =
            crate::config::names_a_credential(key) && !key.to_ascii_lowercase().ends_with("_env");
        by_name || self.secrets.iter().any(|s| value.contains(s))
    }

    /// `commented`: values sit one per line here (a `[table]`, not an inline table), so a note
    /// can follow them.
    fn table(&mut self, table: &mut dyn TableLike, path: &str, commented: bool) {
        for (key, item) in table.iter_mut() {
            let name = key.get().to_owned();
            let at = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            match item {
                Item::Value(value) => self.value(&name, &at, value, commented),
                Item::Table(t) => self.table(t, &at, true),
                Item::ArrayOfTables(tables) => {
                    for (i, t) in tables.iter_mut().enumerate() {
                        self.table(t, &format!("{at}[{i}]"), true);
                    }
                }
                Item::None => {}
            }
        }
    }

    fn value(&mut self, name: &str, at: &str, value: &mut Value, commented: bool) {
        match value {
            Value::String(s) if self.is_secret(name, s.value()) => {
                let prefix = value.decor().prefix().cloned();
                *value = Value::from("");
                if let Some(prefix) = prefix {
                    value.decor_mut().set_prefix(prefix);
                }
                if commented {
                    value.decor_mut().set_suffix(NOTE);
                }
                self.keys.push(at.to_owned());
            }
            Value::InlineTable(t) => self.table(t, at, false),
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.value(name, &format!("{at}[{i}]"), item, false);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"# my hermes
[llm]
model = "gpt-4o"   # the big one
api_key = "sk-live-123456"
api_key_env = "MY_KEY"
max_output_tokens = 800

[telegram]
bot_token = "123:ABC-secret"
allowed_users = ["111", "222"]

[mcp.servers.github]
command = "gh-mcp"
env = { GITHUB_TOKEN = "ghp_abcdef", LOG = "info" }
headers = { Authorization = "Bearer mcp-header-secret" }

[[llm.fallback]]
model = "small"
api_key = "sk-fallback-999"

[store]
url = "postgres://hermes:pg-pass-77@db/hermes"
"#;

    #[test]
    fn secrets_are_emptied_and_everything_else_kept() {
        let known = ["Bearer mcp-header-secret", "pg-pass-77", "ab"];
        let out = redact(CONFIG, &known).unwrap();
        for secret in [
            "sk-live-123456",
            "123:ABC-secret",
            "ghp_abcdef",
            "mcp-header-secret",
            "sk-fallback-999",
            "pg-pass-77",
        ] {
            assert!(
                !out.text.contains(secret),
                "{secret} left in:\n{}",
                out.text
            );
        }
        assert_eq!(
            out.keys,
            [
                "llm.api_key",
                "llm.fallback[0].api_key",
                "telegram.bot_token",
                "mcp.servers.github.env.GITHUB_TOKEN",
                "mcp.servers.github.headers.Authorization",
                "store.url",
            ]
        );
        // Comments, names of variables, numbers and lists are the operator's, kept as written.
        for kept in [
            "# my hermes",
            "model = \"gpt-4o\"   # the big one",
            "api_key_env = \"MY_KEY\"",
            "max_output_tokens = 800",
            "allowed_users = [\"111\", \"222\"]",
            "LOG = \"info\"",
        ] {
            assert!(out.text.contains(kept), "{kept} lost:\n{}", out.text);
        }
        assert!(
            out.text.contains(&format!("api_key = \"\"{NOTE}")),
            "{}",
            out.text
        );
        // Still a configuration: the emptied values parse.
        let back: toml::Table = toml::from_str(&out.text).unwrap();
        assert_eq!(back["telegram"]["bot_token"].as_str(), Some(""));
    }

    #[test]
    fn nothing_secret_leaves_the_text_as_it_was() {
        let text = "[llm]\nmodel = \"m\"\n# a comment\n";
        let out = redact(text, &[]).unwrap();
        assert_eq!(out.text, text);
        assert!(out.keys.is_empty());
    }

    #[test]
    fn a_broken_file_is_named_not_copied() {
        assert!(
            redact("[llm\nmodel = ", &[])
                .unwrap_err()
                .contains("not valid TOML")
        );
    }
}
