//! The environment overlay: variables that override the file, for secrets and quick setups.

use super::{Config, ConfigError, EnvSource, Secret};

/// Apply `OPENAI_*`, `HERMES_*` and each platform's variables on top of the file's values.
pub(super) fn overlay(config: &mut Config, env: &dyn EnvSource) -> Result<(), ConfigError> {
    if let Some(v) = env.var("OPENAI_API_KEY") {
        config.llm.api_key = Secret::new(v.trim());
    }
    if let Some(v) = env.var("OPENAI_BASE_URL") {
        config.llm.base_url = v.trim().trim_end_matches('/').to_owned();
        config.llm.base_url_explicit = true;
    }
    if let Some(v) = env.var("TRANSCRIPTION_API_KEY") {
        config.transcription.api_key = Secret::new(v.trim());
    }
    if let Some(v) = env.var("HERMES_DATABASE_URL") {
        config.store.url = Secret::new(v.trim());
        if !v.trim().is_empty() {
            config.store.backend = super::StoreBackend::Postgres;
        }
    }
    if let Some(v) = env.var("HERMES_MODEL") {
        config.llm.model = v.trim().to_owned();
    }
    if let Some(v) = env.var("HERMES_ALLOWED_USERS") {
        config.gateway.allowed_users = list(&v);
    }
    if let Some(v) = env.var("HERMES_OPERATORS") {
        config.access.operators = list(&v);
    }
    if let Some(v) = env.var("HERMES_ALLOW_ALL_USERS") {
        config.gateway.allow_all_users = boolean("HERMES_ALLOW_ALL_USERS", &v)?;
    }
    if let Some(v) = env.var("HERMES_ADMIN_LISTEN") {
        config.admin.listen = v.trim().to_owned();
    }
    if let Some(v) = env.var("HERMES_ADMIN_TOKEN") {
        config.admin.token = Secret::new(v.trim());
    }
    if let Some(v) = env.var("HERMES_MCP_TOKEN") {
        config.mcp.serve.token = Secret::new(v.trim());
    }
    for platform in config.platforms_mut() {
        platform.overlay(env)?;
    }
    config.tools.web_search.overlay(env);
    config.tools.finance.overlay(env);
    if config.llm.provider == super::ProviderKind::Anthropic {
        if config.llm.api_key.is_empty()
            && let Some(v) = env.var("ANTHROPIC_API_KEY")
        {
            config.llm.api_key = Secret::new(v.trim());
        }
        if !config.llm.base_url_explicit {
            config.llm.base_url = super::ProviderKind::Anthropic.default_base_url().into();
        }
    }
    for fallback in &mut config.llm.fallback {
        if fallback.api_key.is_empty()
            && let Some(name) = &fallback.api_key_env
        {
            match env.var(name) {
                Some(v) => fallback.api_key = Secret::new(v.trim()),
                None => {
                    return Err(ConfigError::env(
                        name,
                        "is named by an [[llm.fallback]] api_key_env but is not set".into(),
                    ));
                }
            }
        }
    }
    config.llm.base_url = config.llm.base_url.trim_end_matches('/').to_owned();
    Ok(())
}

/// A comma-, space- or line-separated list.
pub(super) fn list(value: &str) -> Vec<String> {
    value
        .split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

pub(super) fn boolean(var: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        other => Err(ConfigError::env(
            var,
            format!("`{other}` is not a boolean (use true or false)"),
        )),
    }
}
