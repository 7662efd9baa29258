//! hermes-agent's settings (its `.env` and `config.yaml`) translated into ours: which secrets go
//! to `hermes.env`, which keys to `config.toml`, and what cannot be carried over. Pure: reads
//! nothing, writes nothing.

use std::collections::BTreeMap;

use serde_json::Value;

/// A value for `config.toml` (what `hermes import` and `hermes setup` write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::cli) enum TomlValue {
    Text(String),
    List(Vec<String>),
    Bool(bool),
}

impl std::fmt::Display for TomlValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TomlValue::Text(s) => write!(f, "\"{s}\""),
            TomlValue::List(items) => write!(f, "[{}]", items.join(", ")),
            TomlValue::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// One key of `config.toml`: `[section] key = value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::cli) struct Setting {
    pub section: &'static str,
    pub key: &'static str,
    pub value: TomlValue,
}

/// What hermes-agent's settings become here.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Mapped {
    /// Environment variables for `hermes.env` (tokens, passwords, API keys).
    pub secrets: Vec<(String, String)>,
    /// Keys for `config.toml` (allowlists, addresses, the model).
    pub settings: Vec<Setting>,
    /// People allowed to talk to the agent, as memory owners (`telegram:111`).
    pub people: Vec<String>,
    /// Settings found that hermes does not take over, said once each.
    pub left_out: Vec<String>,
}

/// hermes-agent's settings: its `.env` and the parsed `config.yaml` (`Null` when absent).
#[derive(Debug, Default)]
pub(super) struct AgentSettings {
    pub env: BTreeMap<String, String>,
    pub yaml: Value,
}

impl AgentSettings {
    /// `name` from `.env`, else a top-level key of `config.yaml` (`hermes config set NAME …`
    /// puts unknown upper-case keys there, and hermes-agent bridges them to the environment).
    fn var(&self, name: &str) -> Option<String> {
        self.env
            .get(name)
            .cloned()
            .or_else(|| self.yaml.get(name).and_then(scalar))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// The `config.yaml` block of a platform: top level, `platforms.<name>` or
    /// `gateway.platforms.<name>`, as hermes-agent looks for it.
    fn platform_block(&self, name: &str) -> Option<&Value> {
        [
            self.yaml.get(name),
            self.yaml.get("platforms").and_then(|p| p.get(name)),
            self.yaml
                .get("gateway")
                .and_then(|g| g.get("platforms"))
                .and_then(|p| p.get(name)),
        ]
        .into_iter()
        .flatten()
        .find(|v| v.is_object())
    }
}

/// A string, number or boolean as text.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A comma- or space-separated list, or a YAML list.
fn list_of(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().filter_map(scalar).collect(),
        other => scalar(other).map(|s| split_list(&s)).unwrap_or_default(),
    }
    .into_iter()
    .map(|s| s.trim().to_owned())
    .filter(|s| !s.is_empty())
    .collect()
}

fn split_list(s: &str) -> Vec<String> {
    s.split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A platform both systems serve, and how hermes-agent names its settings.
struct PlatformMap {
    /// Our platform name (`[section]`, memory owners).
    name: &'static str,
    /// Secrets, under the same variable names in both systems.
    secrets: &'static [&'static str],
    /// hermes-agent variable → our `[section]` key, copied as text.
    texts: &'static [(&'static str, &'static str)],
    /// hermes-agent's allowlist variable and our key for it.
    allowlist: (&'static str, &'static str),
}

const PLATFORMS: &[PlatformMap] = &[
    PlatformMap {
        name: "telegram",
        secrets: &["TELEGRAM_BOT_TOKEN"],
        texts: &[],
        allowlist: ("TELEGRAM_ALLOWED_USERS", "allowed_users"),
    },
    PlatformMap {
        name: "discord",
        secrets: &["DISCORD_BOT_TOKEN"],
        texts: &[],
        allowlist: ("DISCORD_ALLOWED_USERS", "allowed_users"),
    },
    PlatformMap {
        name: "slack",
        secrets: &["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"],
        texts: &[],
        allowlist: ("SLACK_ALLOWED_USERS", "allowed_users"),
    },
    PlatformMap {
        name: "matrix",
        secrets: &["MATRIX_PASSWORD", "MATRIX_ACCESS_TOKEN"],
        texts: &[
            ("MATRIX_HOMESERVER", "homeserver"),
            ("MATRIX_USER_ID", "user_id"),
        ],
        allowlist: ("MATRIX_ALLOWED_USERS", "allowed_users"),
    },
    PlatformMap {
        name: "email",
        secrets: &["EMAIL_PASSWORD"],
        texts: &[
            ("EMAIL_ADDRESS", "address"),
            ("EMAIL_IMAP_HOST", "imap_host"),
            ("EMAIL_SMTP_HOST", "smtp_host"),
        ],
        allowlist: ("EMAIL_ALLOWED_USERS", "allowed_senders"),
    },
];

/// hermes-agent settings with no counterpart here, reported when set.
const NOT_CARRIED: &[&str] = &[
    "TELEGRAM_ALLOW_ALL_USERS",
    "DISCORD_ALLOW_ALL_USERS",
    "SLACK_ALLOW_ALL_USERS",
    "MATRIX_ALLOW_ALL_USERS",
    "EMAIL_ALLOW_ALL_USERS",
    "TELEGRAM_GROUP_ALLOWED_USERS",
    "TELEGRAM_PROXY",
    "DISCORD_PROXY",
];

/// Translate hermes-agent's settings.
pub(super) fn map(agent: &AgentSettings) -> Mapped {
    let mut out = Mapped::default();
    for p in PLATFORMS {
        let block = agent.platform_block(p.name);
        for &secret in p.secrets {
            if let Some(v) = agent.var(secret) {
                out.secrets.push((secret.to_owned(), v));
            }
        }
        // `platforms.<name>.token` in config.yaml holds the bot token when .env does not.
        if let Some(token) = block.and_then(|b| b.get("token")).and_then(scalar)
            && !out.secrets.iter().any(|(k, _)| k == p.secrets[0])
            && !token.trim().is_empty()
        {
            out.secrets
                .push((p.secrets[0].to_owned(), token.trim().to_owned()));
        }
        for &(var, key) in p.texts {
            if let Some(v) = agent.var(var) {
                out.settings.push(Setting {
                    section: p.name,
                    key,
                    value: TomlValue::Text(v),
                });
            }
        }
        let (var, key) = p.allowlist;
        let mut allowed = agent.var(var).map(|v| split_list(&v)).unwrap_or_default();
        if allowed.is_empty()
            && let Some(b) = block
        {
            let from = b
                .get("allow_from")
                .or_else(|| b.get("extra").and_then(|e| e.get("allow_from")));
            allowed = from.map(list_of).unwrap_or_default();
        }
        if !allowed.is_empty() {
            out.people
                .extend(allowed.iter().map(|id| format!("{}:{id}", p.name)));
            out.settings.push(Setting {
                section: p.name,
                key,
                value: TomlValue::List(allowed),
            });
        }
    }
    if let Some(v) = agent.var("GATEWAY_ALLOWED_USERS") {
        out.settings.push(Setting {
            section: "gateway",
            key: "allowed_users",
            value: TomlValue::List(split_list(&v)),
        });
    }
    if let Some(v) = agent.var("GATEWAY_ALLOW_ALL_USERS") {
        let on = matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on");
        out.settings.push(Setting {
            section: "gateway",
            key: "allow_all_users",
            value: TomlValue::Bool(on),
        });
    }
    for name in NOT_CARRIED {
        if agent.var(name).is_some() {
            out.left_out
                .push(format!("{name} (no such setting in hermes)"));
        }
    }
    llm(agent, &mut out);
    out
}

/// A provider hermes-agent knows by name: the API it speaks, its base URL and key variable.
struct Provider {
    names: &'static [&'static str],
    anthropic: bool,
    base_url: &'static str,
    key_var: &'static str,
}

const PROVIDERS: &[Provider] = &[
    Provider {
        names: &["openrouter"],
        anthropic: false,
        base_url: "https://openrouter.ai/api/v1",
        key_var: "OPENROUTER_API_KEY",
    },
    Provider {
        names: &["openai", "openai-api"],
        anthropic: false,
        base_url: "https://api.openai.com/v1",
        key_var: "OPENAI_API_KEY",
    },
    Provider {
        names: &["anthropic"],
        anthropic: true,
        base_url: "https://api.anthropic.com/v1",
        key_var: "ANTHROPIC_API_KEY",
    },
    Provider {
        names: &["deepseek"],
        anthropic: false,
        base_url: "https://api.deepseek.com/v1",
        key_var: "DEEPSEEK_API_KEY",
    },
    Provider {
        names: &["ollama"],
        anthropic: false,
        base_url: "http://127.0.0.1:11434/v1",
        key_var: "OLLAMA_API_KEY",
    },
    // `custom`: an OpenAI-compatible endpoint given by `model.base_url`.
    Provider {
        names: &["custom", "local"],
        anthropic: false,
        base_url: "",
        key_var: "OPENAI_API_KEY",
    },
];

/// `model:` of config.yaml (a name, or `{default, provider, base_url, api_key}`) → `[llm]`.
fn llm(agent: &AgentSettings, out: &mut Mapped) {
    let model = agent.yaml.get("model");
    let field = |k: &str| {
        model
            .and_then(|m| m.get(k))
            .and_then(scalar)
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let name = model
        .and_then(scalar)
        .or_else(|| field("default"))
        .or_else(|| field("model"))
        .filter(|s| !s.trim().is_empty());
    let base_url = field("base_url").map(|u| u.trim_end_matches('/').to_owned());
    let provider_name = field("provider").unwrap_or_default().to_ascii_lowercase();
    let provider = if provider_name.is_empty() || provider_name == "auto" {
        // hermes-agent picks the first provider with a key; so does the import.
        match &base_url {
            Some(_) => PROVIDERS.iter().find(|p| p.names.contains(&"custom")),
            None => PROVIDERS.iter().find(|p| agent.var(p.key_var).is_some()),
        }
    } else {
        PROVIDERS
            .iter()
            .find(|p| p.names.contains(&provider_name.as_str()))
    };
    let Some(provider) = provider else {
        if !provider_name.is_empty() {
            out.left_out.push(format!(
                "model provider `{provider_name}` (set [llm] provider, base_url and the key by \
                 hand; hermes speaks OpenAI-compatible APIs and Anthropic's)"
            ));
        }
        if let Some(name) = name {
            out.settings.push(Setting {
                section: "llm",
                key: "model",
                value: TomlValue::Text(name),
            });
        }
        return;
    };
    let base_url = base_url.or_else(|| {
        (!provider.base_url.is_empty()).then(|| match provider.names[0] {
            "ollama" => agent
                .var("OLLAMA_BASE_URL")
                .unwrap_or_else(|| provider.base_url.to_owned()),
            _ => provider.base_url.to_owned(),
        })
    });
    out.settings.push(Setting {
        section: "llm",
        key: "provider",
        value: TomlValue::Text(
            if provider.anthropic {
                "anthropic"
            } else {
                "openai"
            }
            .into(),
        ),
    });
    if let Some(url) = base_url {
        out.settings.push(Setting {
            section: "llm",
            key: "base_url",
            value: TomlValue::Text(url),
        });
    }
    if let Some(name) = name {
        out.settings.push(Setting {
            section: "llm",
            key: "model",
            value: TomlValue::Text(name),
        });
    }
    let key = field("api_key").or_else(|| agent.var(provider.key_var));
    if let Some(key) = key {
        let ours = if provider.anthropic {
            "ANTHROPIC_API_KEY"
        } else {
            "OPENAI_API_KEY"
        };
        out.secrets.push((ours.to_owned(), key));
    }
}

/// Parse a dotenv file: `KEY=value` lines, `export ` prefixes, quotes and `#` comments.
pub(super) fn parse_env(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..]
                .find(q)
                .map_or(&value[1..], |end| &value[1..=end]),
            _ => value.split(" #").next().unwrap_or(value).trim_end(),
        };
        out.insert(key.to_owned(), value.to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(env: &str, yaml: &str) -> AgentSettings {
        AgentSettings {
            env: parse_env(env),
            yaml: if yaml.is_empty() {
                Value::Null
            } else {
                serde_norway::from_str(yaml).unwrap()
            },
        }
    }

    fn setting(m: &Mapped, section: &str, key: &str) -> Option<TomlValue> {
        m.settings
            .iter()
            .find(|s| s.section == section && s.key == key)
            .map(|s| s.value.clone())
    }

    fn secret<'a>(m: &'a Mapped, name: &str) -> Option<&'a str> {
        m.secrets
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn dotenv_lines_are_read_like_python_dotenv() {
        let env = parse_env(
            "# comment\nexport A=1\nB = \"two words\"\nC='x#y'\nD=plain # trailing\nnot a line\nE=\n",
        );
        assert_eq!(env["A"], "1");
        assert_eq!(env["B"], "two words");
        assert_eq!(env["C"], "x#y");
        assert_eq!(env["D"], "plain");
        assert_eq!(env["E"], "");
        assert_eq!(env.len(), 5);
    }

    #[test]
    fn platform_tokens_become_secrets_and_allowlists_settings() {
        let m = map(&agent(
            "TELEGRAM_BOT_TOKEN=123:abc\nTELEGRAM_ALLOWED_USERS=111, 222\nSLACK_BOT_TOKEN=xoxb-1\n\
             SLACK_APP_TOKEN=xapp-1\nSLACK_ALLOWED_USERS=U1\nEMAIL_ADDRESS=bot@example.org\n\
             EMAIL_PASSWORD=pw\nEMAIL_ALLOWED_USERS=ann@example.org\nTELEGRAM_ALLOW_ALL_USERS=true\n",
            // `hermes config set DISCORD_ALLOWED_USERS …` writes a top-level key.
            "DISCORD_ALLOWED_USERS: 424242,434343\nDISCORD_BOT_TOKEN: 99\n",
        ));
        assert_eq!(secret(&m, "TELEGRAM_BOT_TOKEN"), Some("123:abc"));
        assert_eq!(secret(&m, "SLACK_APP_TOKEN"), Some("xapp-1"));
        assert_eq!(secret(&m, "EMAIL_PASSWORD"), Some("pw"));
        assert_eq!(secret(&m, "DISCORD_BOT_TOKEN"), Some("99"));
        assert_eq!(
            setting(&m, "telegram", "allowed_users"),
            Some(TomlValue::List(vec!["111".into(), "222".into()]))
        );
        assert_eq!(
            setting(&m, "discord", "allowed_users"),
            Some(TomlValue::List(vec!["424242".into(), "434343".into()]))
        );
        assert_eq!(
            setting(&m, "email", "allowed_senders"),
            Some(TomlValue::List(vec!["ann@example.org".into()]))
        );
        assert_eq!(
            setting(&m, "email", "address"),
            Some(TomlValue::Text("bot@example.org".into()))
        );
        assert!(
            m.people.contains(&"telegram:222".to_owned()),
            "{:?}",
            m.people
        );
        assert!(m.people.contains(&"slack:U1".to_owned()));
        assert!(
            m.left_out[0].starts_with("TELEGRAM_ALLOW_ALL_USERS"),
            "{:?}",
            m.left_out
        );
    }

    #[test]
    fn a_platform_block_in_config_yaml_counts_when_env_is_silent() {
        let m = map(&agent(
            "",
            "platforms:\n  telegram:\n    token: '7:tok'\n    extra:\n      allow_from: [5, 6]\n",
        ));
        assert_eq!(secret(&m, "TELEGRAM_BOT_TOKEN"), Some("7:tok"));
        assert_eq!(
            setting(&m, "telegram", "allowed_users"),
            Some(TomlValue::List(vec!["5".into(), "6".into()]))
        );
    }

    #[test]
    fn model_and_provider_become_the_llm_section() {
        let m = map(&agent(
            "OPENROUTER_API_KEY=sk-or\n",
            "model:\n  default: anthropic/claude-sonnet-4\n  provider: openrouter\n",
        ));
        assert_eq!(
            setting(&m, "llm", "base_url"),
            Some(TomlValue::Text("https://openrouter.ai/api/v1".into()))
        );
        assert_eq!(
            setting(&m, "llm", "provider"),
            Some(TomlValue::Text("openai".into()))
        );
        assert_eq!(
            setting(&m, "llm", "model"),
            Some(TomlValue::Text("anthropic/claude-sonnet-4".into()))
        );
        assert_eq!(secret(&m, "OPENAI_API_KEY"), Some("sk-or"));

        let m = map(&agent(
            "ANTHROPIC_API_KEY=sk-ant\n",
            "model:\n  default: claude-sonnet-4-5\n  provider: anthropic\n",
        ));
        assert_eq!(
            setting(&m, "llm", "provider"),
            Some(TomlValue::Text("anthropic".into()))
        );
        assert_eq!(secret(&m, "ANTHROPIC_API_KEY"), Some("sk-ant"));

        let m = map(&agent(
            "OPENAI_API_KEY=sk-local\n",
            "model:\n  provider: custom\n  default: llama\n  base_url: http://127.0.0.1:8080/v1/\n",
        ));
        assert_eq!(
            setting(&m, "llm", "base_url"),
            Some(TomlValue::Text("http://127.0.0.1:8080/v1".into()))
        );
        assert_eq!(secret(&m, "OPENAI_API_KEY"), Some("sk-local"));
    }

    #[test]
    fn an_unknown_provider_keeps_the_model_name_and_says_so() {
        let m = map(&agent(
            "",
            "model:\n  default: hermes-4\n  provider: nous\n",
        ));
        assert_eq!(
            setting(&m, "llm", "model"),
            Some(TomlValue::Text("hermes-4".into()))
        );
        assert!(setting(&m, "llm", "provider").is_none());
        assert!(m.left_out[0].contains("`nous`"), "{:?}", m.left_out);
        // A bare model name with no provider and no key maps to the name alone.
        let m = map(&agent("", "model: gpt-4o\n"));
        assert_eq!(m.settings.len(), 1, "{:?}", m.settings);
    }
}
