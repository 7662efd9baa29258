//! Checking answers on the spot with the daemon's own code: a platform's credentials through
//! its adapter's probe (Telegram `getMe`, Discord `/users/@me`, Slack `auth.test`, an IMAP and
//! SMTP login, a Matrix password login), a model provider's key by listing its models. Both
//! use the configuration's base URLs, so they reach the servers the daemon will.

use std::time::Duration;

use hermes_adapter::Platform;

use super::plan::{Llm, Plan, built_in};
use crate::config::{Config, ProviderKind, Secret};

/// How long one check may take before it counts as failed.
const CHECK_TIMEOUT: Duration = Duration::from_secs(45);

/// What a check came to.
#[derive(Debug)]
pub(super) enum Verified {
    /// Accepted; what the platform said about the account (`@bot (id 1)`).
    Ok(String),
    /// Refused or unreachable; the reason, without any secret.
    Failed(String),
    /// This build has no adapter for the platform, so nothing could be checked.
    NotBuiltIn(String),
}

/// Check `platform`'s credentials as the plan's candidate configuration holds them.
pub(super) async fn platform(plan: &Plan, platform: Platform) -> Verified {
    let feature = platform.as_str();
    if !built_in(platform) {
        return Verified::NotBuiltIn(format!(
            "not verified: this hermes was built without the `{feature}` feature, so it cannot \
             run {} either (build with `--features {feature}`)",
            platform.title()
        ));
    }
    let Some(section) = plan.config.platform(platform) else {
        return Verified::Failed(format!("{platform} has no configuration section"));
    };
    if let Err(e) = section.validate(None) {
        return Verified::Failed(plan.scrub(&e.to_string()));
    }
    let check = async {
        let adapter = section.build(&plan.config)?;
        adapter.probe().await.map_err(|e| e.to_string())
    };
    match tokio::time::timeout(CHECK_TIMEOUT, check).await {
        Ok(Ok(about)) => Verified::Ok(plan.scrub(&about)),
        Ok(Err(e)) => Verified::Failed(plan.scrub(&e)),
        Err(_) => Verified::Failed(format!("no answer within {} s", CHECK_TIMEOUT.as_secs())),
    }
}

/// The models `llm`'s key may use (sorted; empty when the server keeps no list), or why the
/// key or the server was not accepted.
pub(super) async fn models(config: &Config, llm: &Llm) -> Result<Vec<String>, String> {
    let mut settings = crate::llm::ProviderSettings::from_config(&config.llm);
    settings.base_url = llm.base_url.trim_end_matches('/').to_owned();
    settings.api_key = llm.api_key.clone();
    settings.timeout = CHECK_TIMEOUT;
    let scrub = |text: String| super::plan::scrub(&[&llm.api_key], &text);
    let provider = crate::llm::build(llm.kind, &settings).map_err(|e| scrub(e.to_string()))?;
    match tokio::time::timeout(CHECK_TIMEOUT, provider.models()).await {
        Ok(Ok(models)) => Ok(models),
        Ok(Err(e)) => Err(scrub(e.to_string())),
        Err(_) => Err(format!(
            "{} did not answer within {} s",
            settings.base_url,
            CHECK_TIMEOUT.as_secs()
        )),
    }
}

/// The environment variable a provider's key is read from.
pub(super) fn key_variable(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "OPENAI_API_KEY",
        ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
    }
}

/// An empty key is fine only for a server on this machine (Ollama, llama.cpp, vLLM).
pub(super) fn key_may_be_empty(base_url: &str) -> bool {
    reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .is_some_and(|h| h == "localhost" || h == "127.0.0.1" || h == "[::1]" || h == "::1")
}

/// A secret read from a prompt or a flag, trimmed.
pub(super) fn secret(value: &str) -> Secret {
    Secret::new(value.trim())
}
