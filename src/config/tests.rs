//! Unit tests of configuration loading.

use std::path::Path;

use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("/etc/hermes/config.toml"))
}

#[test]
fn empty_file_gives_defaults() {
    let c = parse("").unwrap();
    assert_eq!(c.agent.max_iterations, 90);
    assert_eq!(c.gateway.busy_mode, BusyMode::Interrupt);
    assert!(!c.llm.is_configured());
}

#[test]
fn wrong_type_names_key_and_line() {
    let err = parse("[agent]\nmax_iterations = \"many\"\n").unwrap_err();
    assert_eq!(err.key, "agent.max_iterations");
    assert_eq!(err.line, Some(2));
    let shown = err.to_string();
    assert!(
        shown.contains("/etc/hermes/config.toml, line 2, key `agent.max_iterations`"),
        "{shown}"
    );
}

#[test]
fn unknown_variant_and_unknown_key_are_reported() {
    let err = parse("[gateway]\nbusy_mode = \"fast\"\n").unwrap_err();
    assert_eq!(err.key, "gateway.busy_mode");
    assert!(err.problem.contains("interrupt"), "{}", err.problem);

    let err = parse("[gateway]\nbussy_mode = \"queue\"\n").unwrap_err();
    assert!(err.problem.contains("bussy_mode"), "{}", err.problem);
    assert!(err.key.starts_with("gateway"), "{}", err.key);
}

#[test]
fn syntax_error_has_a_line() {
    let err = parse("[llm]\nmodel = \n").unwrap_err();
    assert_eq!(err.line, Some(2));
}

#[test]
fn environment_overrides_file_and_marks_provider_configured() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[llm]\nmodel = \"from-file\"\n[telegram]\nallowed_users = [\"1\"]\n",
    )
    .unwrap();
    let env = [
        ("HERMES_HOME", "/var/lib/hermes"),
        ("HERMES_MODEL", "from-env"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1/"),
        ("TELEGRAM_BOT_TOKEN", "123:abc"),
        ("TELEGRAM_ALLOWED_USERS", "42, 43"),
    ];
    let c = Config::load(Some(&path), &env).unwrap();
    assert_eq!(c.llm.model, "from-env");
    assert_eq!(c.llm.base_url, "http://127.0.0.1:11434/v1");
    assert!(c.llm.is_configured());
    assert!(c.telegram.is_active());
    assert_eq!(c.telegram.allowed_users, ["42", "43"]);
    assert_eq!(c.home, Path::new("/var/lib/hermes"));
    assert!(
        !format!("{c:?}").contains("123:abc"),
        "token leaked into Debug"
    );
}

#[test]
fn semantic_errors_name_the_key() {
    let env = [("HERMES_HOME", "/tmp/x")];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    for (text, key) in [
        ("[llm]\nbase_url = \"ftp://x\"\n", "llm.base_url"),
        ("[agent]\nmax_iterations = 0\n", "agent.max_iterations"),
        ("[agent]\ntimezone = \"Mars/Olympus\"\n", "agent.timezone"),
        (
            "[telegram]\nallowed_users = [\"@bob\"]\n",
            "telegram.allowed_users",
        ),
        (
            "[gateway]\nallowed_users = [\"icq:5\"]\n",
            "gateway.allowed_users",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let err = Config::load(Some(&path), &env).unwrap_err();
        assert_eq!(err.key, key, "for {text}");
    }
}

#[test]
fn bad_environment_values_name_the_variable() {
    let err = Config::load(
        Some(Path::new("/nonexistent/hermes.toml")),
        &[("HERMES_HOME", "/tmp/x")],
    )
    .unwrap_err();
    assert!(err.problem.contains("cannot read"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("HERMES_HOME", dir.path().to_str().unwrap()),
        ("TELEGRAM_ALLOWED_USERS", "12,alice"),
    ];
    let err = Config::load(None, &env).unwrap_err();
    assert_eq!(
        err.to_string().split(':').next().unwrap(),
        "environment variable TELEGRAM_ALLOWED_USERS"
    );
}

#[test]
fn missing_default_file_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("HERMES_HOME", dir.path().to_str().unwrap())];
    let c = Config::load(None, &env).unwrap();
    assert!(c.source.is_none());
    assert_eq!(c.database_path(), dir.path().join("hermes.db"));
}

/// Every key of the configuration is in the example: set to its default, or (when it has no
/// default worth writing, like a token or an optional prompt) shown commented out.
#[test]
fn the_example_file_is_valid_and_matches_the_defaults() {
    let text = include_str!("../../config/hermes.example.toml");
    let parsed = parse(text).unwrap();
    parsed.validate().unwrap();
    let defaults = serde_json::to_value(Config::default()).unwrap();
    let example = serde_json::to_value(toml::from_str::<toml::Table>(text).unwrap()).unwrap();
    let documented = commented_out(text);
    let mut problems = Vec::new();
    compare(&defaults, Some(&example), "", &documented, &mut problems);
    assert!(
        problems.is_empty(),
        "config/hermes.example.toml:\n{}",
        problems.join("\n")
    );
    assert_eq!(
        serde_json::to_value(&parsed).unwrap(),
        defaults,
        "the example, read as a configuration, is the defaults"
    );
}

/// Walk the defaults; each leaf (a value, a list, an empty table) must be in the example with
/// the same value, or be commented out there.
fn compare(
    default: &serde_json::Value,
    example: Option<&serde_json::Value>,
    path: &str,
    documented: &std::collections::BTreeSet<String>,
    problems: &mut Vec<String>,
) {
    use serde_json::Value;
    if let Value::Object(map) = default
        && !map.is_empty()
    {
        for (key, value) in map {
            let sub = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            compare(
                value,
                example.and_then(|e| e.get(key)),
                &sub,
                documented,
                problems,
            );
        }
        return;
    }
    let same = |a: &Value, b: &Value| match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    };
    match example {
        Some(e) if !same(default, e) => problems.push(format!(
            "`{path}` is {e} in the example but {default} by default"
        )),
        Some(_) => {}
        None if documented.contains(path)
            || documented
                .iter()
                .any(|d| d.starts_with(&format!("{path}."))) => {}
        None => problems.push(format!(
            "`{path}` (default {default}) is missing: add it, commented out if it has no default"
        )),
    }
}

/// The keys and tables shown commented out (`# key = …`, `# [table]`), as dotted paths.
fn commented_out(text: &str) -> std::collections::BTreeSet<String> {
    let header = regex::Regex::new(r"^\[\[?([^\]]+)\]\]?").unwrap();
    let key = regex::Regex::new(r"^([A-Za-z0-9_]+)\s*=").unwrap();
    let dotted = |h: &str| h.replace('"', "").trim().to_owned();
    let (mut section, mut commented_section) = (String::new(), None::<String>);
    let mut out = std::collections::BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(c) = header.captures(line) {
            section = dotted(&c[1]);
            commented_section = None;
            continue;
        }
        let Some(rest) = line.strip_prefix('#').map(str::trim) else {
            continue;
        };
        if let Some(c) = header.captures(rest) {
            let table = dotted(&c[1]);
            out.insert(table.clone());
            commented_section = Some(table);
        } else if let Some(c) = key.captures(rest) {
            let table = commented_section.as_ref().unwrap_or(&section);
            out.insert(format!("{table}.{}", &c[1]));
        }
    }
    out
}

#[test]
fn telegram_webhook_mode_comes_from_file_and_environment_with_key_precise_errors() {
    let c = parse(
        "[telegram]\nmode = \"webhook\"\nwebhook_url = \"https://bot.example.com/telegram\"\n",
    )
    .unwrap();
    c.validate().unwrap();
    assert_eq!(c.telegram.mode, TelegramMode::Webhook);
    assert_eq!(c.telegram.webhook_listen, "127.0.0.1:8443");

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().to_str().unwrap();
    let env = [
        ("HERMES_HOME", home),
        ("TELEGRAM_BOT_TOKEN", "123:abc"),
        ("TELEGRAM_MODE", "webhook"),
        ("TELEGRAM_WEBHOOK_URL", "https://bot.example.com:8443/hook"),
        ("TELEGRAM_WEBHOOK_LISTEN", "0.0.0.0:9000"),
        ("TELEGRAM_WEBHOOK_SECRET", "s3cret-Webhook_token"),
    ];
    let c = Config::load(None, &env).unwrap();
    assert_eq!(c.telegram.mode, TelegramMode::Webhook);
    assert_eq!(c.telegram.webhook_listen, "0.0.0.0:9000");
    assert!(c.secrets().contains(&"s3cret-Webhook_token"));
    assert!(!format!("{c:?}").contains("s3cret-Webhook_token"));
    assert!(c.telegram.summary().contains("webhook"));

    let err = Config::load(None, &[("HERMES_HOME", home), ("TELEGRAM_MODE", "push")]).unwrap_err();
    assert_eq!(err.key, "TELEGRAM_MODE");
    let err = parse("[telegram]\nmode = \"hook\"\n").unwrap_err();
    assert_eq!(err.key, "telegram.mode");
    for (toml, key, says) in [
        (
            "mode = \"webhook\"\n",
            "telegram.webhook_url",
            "public HTTPS URL",
        ),
        (
            "mode = \"webhook\"\nwebhook_url = \"http://bot.example.com/t\"\n",
            "telegram.webhook_url",
            "HTTPS",
        ),
        (
            "webhook_listen = \"localhost\"\n",
            "telegram.webhook_listen",
            "port",
        ),
        (
            "webhook_secret = \"has spaces and $ signs\"\n",
            "telegram.webhook_secret",
            "A-Z",
        ),
    ] {
        let err = parse(&format!("[telegram]\n{toml}"))
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(err.key, key, "{toml}");
        assert!(err.problem.contains(says), "{toml}: {}", err.problem);
        assert!(
            !err.problem.contains("$ signs"),
            "the secret is never echoed"
        );
    }
}

#[cfg(feature = "postgres")]
#[test]
fn webhook_mode_on_a_shared_store_needs_a_configured_secret() {
    let base = "[store]\nbackend = \"postgres\"\nurl = \"postgres://hermes@127.0.0.1/hermes\"\n\
                [telegram]\nmode = \"webhook\"\nwebhook_url = \"https://bot.example.com/telegram\"\n";
    let err = parse(base).unwrap().validate().unwrap_err();
    assert_eq!(err.key, "telegram.webhook_secret");
    assert!(err.problem.contains("load balancer"), "{}", err.problem);
    parse(&format!("{base}webhook_secret = \"shared-Secret_1\"\n"))
        .unwrap()
        .validate()
        .unwrap();
    // One process on SQLite may generate its own.
    parse(&format!(
        "[telegram]{}",
        base.split_once("[telegram]").unwrap().1
    ))
    .unwrap()
    .validate()
    .unwrap();
}

#[test]
fn slack_comes_from_the_environment_and_needs_a_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().to_str().unwrap();
    let env = [
        ("HERMES_HOME", home),
        ("SLACK_BOT_TOKEN", "xoxb-1"),
        ("SLACK_APP_TOKEN", "xapp-1"),
        ("SLACK_ALLOWED_USERS", "U1,U2"),
        ("SLACK_API_URL", "http://127.0.0.1:9/api/"),
    ];
    let c = Config::load(None, &env).unwrap();
    assert!(c.slack.is_active());
    assert_eq!(c.slack.mode(), "Socket Mode");
    assert_eq!(c.slack.allowed_users, ["U1", "U2"]);
    assert_eq!(c.slack.api_url, "http://127.0.0.1:9/api");
    let err = Config::load(
        None,
        &[("HERMES_HOME", home), ("SLACK_BOT_TOKEN", "xoxb-1")],
    )
    .unwrap_err();
    assert_eq!(err.key, "slack.app_token");
    let err = parse("[slack]\nevents_listen = \"localhost\"\n")
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(err.key, "slack.events_listen");
}

#[test]
fn mcp_servers_parse_and_their_errors_name_the_key() {
    let c = parse(
        "[mcp.servers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"pkg\"]\n\
         env = { API_TOKEN = \"tok-123456789\" }\n\
         [mcp.servers.web]\nurl = \"https://mcp.example.com/mcp\"\nheaders = { X-Key = \"hdr-987654321\" }\n\
         [policy.tools]\nmcp_files = \"deny\"\nmcp_web_search = \"auto\"\n",
    )
    .unwrap();
    c.validate().unwrap();
    assert_eq!(c.mcp.servers["files"].timeout_secs, 60);
    // Header values and credential-named env values are secrets: scrubbed, and not printed.
    let secrets = c.secrets();
    assert!(secrets.contains(&"tok-123456789") && secrets.contains(&"hdr-987654321"));
    let shown = toml::to_string(&c).unwrap();
    assert!(
        !shown.contains("tok-123456789") && !shown.contains("hdr-987654321"),
        "{shown}"
    );
    for (text, key) in [
        ("[mcp.servers.a]\n", "mcp.servers.a.command"),
        (
            "[mcp.servers.a]\ncommand = \"x\"\nurl = \"http://h/\"\n",
            "mcp.servers.a.url",
        ),
        ("[mcp.servers.a]\nurl = \"ftp://h/\"\n", "mcp.servers.a.url"),
        (
            "[mcp.servers.a]\nurl = \"http://h/\"\nargs = [\"x\"]\n",
            "mcp.servers.a.args",
        ),
        (
            "[mcp.servers.\"a b\"]\ncommand = \"x\"\n",
            "mcp.servers.a b",
        ),
        (
            "[mcp.servers.a]\ncommand = \"x\"\ntimeout_secs = 0\n",
            "mcp.servers.a.timeout_secs",
        ),
        (
            "[mcp.servers.a]\ncommand = \"x\"\n[policy.tools]\nmcp_b_x = \"deny\"\n",
            "policy.tools",
        ),
    ] {
        let err = parse(text).unwrap().validate().unwrap_err();
        assert_eq!(err.key, key, "{text}");
    }
}

#[test]
fn policy_and_tool_overrides_parse() {
    let c = parse(
        "[policy]\nlevel = \"safe\"\n[policy.platforms]\ntelegram = \"full-access\"\n\
         [policy.matrix.auto]\nsystem = \"deny\"\n[policy.tools]\nterminal = \"confirm\"\n\
         [tools.platforms]\ntelegram = [\"core\", \"web\"]\n",
    )
    .unwrap();
    c.validate().unwrap();
    assert_eq!(c.level(Platform::Telegram), Level::FullAccess);
    assert_eq!(c.level(Platform::Cli), Level::Safe);
    assert_eq!(c.toolsets(Platform::Telegram), ["core", "web"]);
    let err = parse("[tools]\ntoolsets = [\"core\", \"rockets\"]\n")
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(err.key, "tools.toolsets");
    let err = parse("[policy.tools]\nlaunch = \"deny\"\n")
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(err.key, "policy.tools");
    let err = parse("[policy]\nlevel = \"yolo\"\n").unwrap_err();
    assert_eq!(err.key, "policy.level");
}

#[test]
fn reset_policy_overrides_go_from_general_to_specific() {
    use crate::config::ResetMode;
    use hermes_adapter::ChatKind;
    let c = parse(
        "[sessions]\nreset = \"daily\"\n[sessions.by.group]\nreset = \"none\"\n\
         [sessions.by.\"telegram.group\"]\nreset = \"idle\"\nidle_minutes = 30\n",
    )
    .unwrap();
    c.validate().unwrap();
    assert_eq!(
        c.sessions.policy(Platform::Telegram, ChatKind::Direct).mode,
        ResetMode::Daily
    );
    assert_eq!(
        c.sessions.policy(Platform::Discord, ChatKind::Group).mode,
        ResetMode::None
    );
    let tg = c.sessions.policy(Platform::Telegram, ChatKind::Group);
    assert_eq!((tg.mode, tg.idle_minutes), (ResetMode::Idle, 30));
    let err = parse("[sessions.by.weekly]\nreset = \"none\"\n")
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(err.key, "sessions.by");
}

#[test]
fn email_comes_from_the_environment() {
    let env = [
        ("EMAIL_ADDRESS", "Bot@Example.com"),
        ("EMAIL_PASSWORD", "pw-secret"),
        ("EMAIL_IMAP_HOST", "imap.example.com"),
        ("EMAIL_IMAP_PORT", "143"),
        ("EMAIL_IMAP_SECURITY", "starttls"),
        ("EMAIL_SMTP_HOST", "smtp.example.com"),
        ("EMAIL_ALLOWED_SENDERS", "Alice@Example.com, @corp.example"),
    ];
    let mut c = Config::default();
    c.email.overlay(&env).unwrap();
    c.email.validate(None).unwrap();
    assert!(c.email.is_active());
    assert_eq!(c.email.imap_port, 143);
    assert_eq!(
        c.email.allowed_senders,
        ["alice@example.com", "@corp.example"]
    );
    assert_eq!(c.email.imap_login(), ("Bot@Example.com", "pw-secret"));
    assert!(c.secrets().contains(&"pw-secret"));
    let env = [("EMAIL_IMAP_PORT", "imap")];
    assert!(c.email.overlay(&env).is_err());
    c.email.smtp_security = "ssl3".into();
    assert!(c.email.validate(None).is_err());
}

#[test]
fn the_email_sender_rule_comes_from_the_environment_and_is_said() {
    let env = [
        ("EMAIL_ADDRESS", "bot@example.com"),
        ("EMAIL_IMAP_HOST", "imap.example.com"),
        ("EMAIL_SMTP_HOST", "smtp.example.com"),
    ];
    let mut c = Config::default();
    c.email.overlay(&env).unwrap();
    // Nothing configured: no mail is served, and the summary says what to set.
    let none = c.email.summary();
    assert!(
        none.contains("no mail is served") && none.contains("EMAIL_AUTHSERV_IDS"),
        "{none}"
    );
    let env = [("EMAIL_AUTHSERV_IDS", "MX.example.com, mx2.example.com")];
    c.email.overlay(&env).unwrap();
    c.email.validate(None).unwrap();
    assert_eq!(c.email.authserv_ids, ["mx.example.com", "mx2.example.com"]);
    assert!(
        c.email
            .summary()
            .ends_with("senders: aligned DMARC/DKIM pass from mx.example.com, mx2.example.com"),
        "{}",
        c.email.summary()
    );
    c.email.authserv_ids.clear();
    c.email
        .overlay(&[("EMAIL_TRUST_UNAUTHENTICATED", "true")])
        .unwrap();
    assert!(c.email.trust_unauthenticated);
    assert!(c.email.summary().contains("senders: NOT authenticated"));
    assert!(
        c.email
            .overlay(&[("EMAIL_TRUST_UNAUTHENTICATED", "maybe")])
            .is_err()
    );
    c.email.authserv_ids = vec!["mx.example.com; dmarc=pass".into()];
    let err = c.email.validate(None).unwrap_err();
    assert_eq!(err.key, "email.authserv_ids");
}

#[test]
fn every_chat_platform_has_one_section_in_both_lists() {
    let mut c = Config::default();
    let read: Vec<Platform> = c.platforms().iter().map(|p| p.platform()).collect();
    let write: Vec<Platform> = c.platforms_mut().iter().map(|p| p.platform()).collect();
    assert_eq!(
        read, write,
        "platforms() and platforms_mut() list the same sections"
    );
    let unique: std::collections::BTreeSet<_> = read.iter().collect();
    assert_eq!(unique.len(), read.len(), "no section twice");
    for p in Platform::ALL {
        let chat = !matches!(p, Platform::Cli | Platform::Cron);
        assert_eq!(
            read.contains(p),
            chat,
            "{p}: a chat platform has a section, only they do"
        );
    }
}

#[test]
fn a_bare_matrix_id_is_a_valid_global_allowlist_entry() {
    let mut c = Config::default();
    c.gateway.allowed_users = vec![
        "@alice:example.org".into(),
        "matrix:@bob:example.org".into(),
    ];
    c.gateway.validate(None).unwrap();
    let on_matrix = c
        .gateway
        .allowed_on(hermes_adapter::Platform::Matrix, |e| e.starts_with('@'));
    assert_eq!(on_matrix, ["@alice:example.org", "@bob:example.org"]);
}
