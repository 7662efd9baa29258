//! `[tools.web_search]` and `[tools.finance]`: the third-party HTTP APIs behind `web_search` and
//! the market tools. Each names one provider, its key and its address; without a provider the
//! tools are not offered to the model, and `hermes doctor` says so.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::validate::check_http_url;
use super::{ConfigError, EnvSource, Secret};

/// Most results a search may return, whatever is asked.
pub const MAX_SEARCH_RESULTS: usize = 20;

/// Which search API `web_search` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WebSearchProvider {
    /// Tavily (`POST /search`), key required.
    Tavily,
    /// Brave Search (`GET /res/v1/web/search`), key required.
    Brave,
    /// A SearXNG instance (`GET /search?format=json`), no key, `url` required.
    Searxng,
}

impl WebSearchProvider {
    /// The name people know it by.
    pub fn label(self) -> &'static str {
        match self {
            WebSearchProvider::Tavily => "Tavily",
            WebSearchProvider::Brave => "Brave Search",
            WebSearchProvider::Searxng => "SearXNG",
        }
    }

    /// The public address of the API; SearXNG has none (it is self-hosted).
    pub fn default_url(self) -> Option<&'static str> {
        match self {
            WebSearchProvider::Tavily => Some("https://api.tavily.com"),
            WebSearchProvider::Brave => Some("https://api.search.brave.com"),
            WebSearchProvider::Searxng => None,
        }
    }

    /// The environment variable read for the key when the file sets none.
    pub fn key_env(self) -> Option<&'static str> {
        match self {
            WebSearchProvider::Tavily => Some("TAVILY_API_KEY"),
            WebSearchProvider::Brave => Some("BRAVE_SEARCH_API_KEY"),
            WebSearchProvider::Searxng => None,
        }
    }
}

/// `[tools.web_search]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchConfig {
    /// `"tavily"`, `"brave"` or `"searxng"`. Unset: `web_search` is not offered.
    pub provider: Option<WebSearchProvider>,
    /// The provider's key (Tavily, Brave). Env: `TAVILY_API_KEY` / `BRAVE_SEARCH_API_KEY`.
    pub api_key: Secret,
    /// Base URL of the API; empty: the provider's public one. Required for SearXNG (the
    /// instance's address, e.g. `http://127.0.0.1:8888`).
    pub url: String,
    /// Results returned when the model does not ask for a number (at most 20).
    pub max_results: usize,
    /// Seconds one search may take.
    pub timeout_secs: u64,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        WebSearchConfig {
            provider: None,
            api_key: Secret::default(),
            url: String::new(),
            max_results: 5,
            timeout_secs: 20,
        }
    }
}

impl WebSearchConfig {
    /// The API's base URL in force, without a trailing slash.
    pub fn base_url(&self) -> Option<String> {
        let url = self.url.trim();
        let url = if url.is_empty() {
            self.provider?.default_url()?
        } else {
            url
        };
        Some(url.trim_end_matches('/').to_owned())
    }

    /// One line for `hermes doctor` and `hermes config check`.
    pub fn summary(&self) -> String {
        match (self.provider, self.base_url()) {
            (Some(p), Some(url)) => format!("{} at {}", p.label(), host_of(&url)),
            _ => "not configured ([tools.web_search] provider): web_search is not offered".into(),
        }
    }

    pub(super) fn overlay(&mut self, env: &dyn EnvSource) {
        if self.api_key.is_empty()
            && let Some(v) = self.provider.and_then(|p| env.var(p.key_env()?))
        {
            self.api_key = Secret::new(v.trim());
        }
    }

    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| {
            Err(ConfigError::invalid(
                file,
                &format!("tools.web_search.{key}"),
                problem,
            ))
        };
        if !(1..=MAX_SEARCH_RESULTS).contains(&self.max_results) {
            return bad(
                "max_results",
                format!("must be between 1 and {MAX_SEARCH_RESULTS}"),
            );
        }
        if self.timeout_secs == 0 {
            return bad("timeout_secs", "must be at least 1".into());
        }
        if !self.url.trim().is_empty()
            && let Err(e) = check_http_url(self.url.trim())
        {
            return bad("url", e);
        }
        let Some(provider) = self.provider else {
            if !self.api_key.is_empty() || !self.url.trim().is_empty() {
                return bad(
                    "provider",
                    "is missing: name the search API the key or URL is for (\"tavily\", \
                     \"brave\" or \"searxng\")"
                        .into(),
                );
            }
            return Ok(());
        };
        if provider == WebSearchProvider::Searxng && self.url.trim().is_empty() {
            return bad(
                "url",
                "is required for SearXNG: the address of your instance, e.g. \
                 \"http://127.0.0.1:8888\" (its settings.yml must allow the json format)"
                    .into(),
            );
        }
        if let Some(env) = provider.key_env()
            && self.api_key.is_empty()
        {
            return bad(
                "api_key",
                format!(
                    "is required for {}: set it here or in the environment variable {env}",
                    provider.label()
                ),
            );
        }
        Ok(())
    }
}

/// Which market data API the finance tools ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FinanceProvider {
    /// Finnhub's REST API (`/api/v1`), key in the `X-Finnhub-Token` header.
    Finnhub,
}

impl FinanceProvider {
    pub fn label(self) -> &'static str {
        match self {
            FinanceProvider::Finnhub => "Finnhub",
        }
    }

    pub fn default_url(self) -> &'static str {
        match self {
            FinanceProvider::Finnhub => "https://finnhub.io/api/v1",
        }
    }

    pub fn key_env(self) -> &'static str {
        match self {
            FinanceProvider::Finnhub => "FINNHUB_API_KEY",
        }
    }
}

/// `[tools.finance]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FinanceConfig {
    /// `"finnhub"`. Unset: `market_quote`, `market_news` and `company_profile` are not offered.
    pub provider: Option<FinanceProvider>,
    /// The provider's key. Env: `FINNHUB_API_KEY`.
    pub api_key: Secret,
    /// Base URL of the API; empty: the provider's (`https://finnhub.io/api/v1`).
    pub url: String,
    /// Seconds one request may take.
    pub timeout_secs: u64,
}

impl Default for FinanceConfig {
    fn default() -> Self {
        FinanceConfig {
            provider: None,
            api_key: Secret::default(),
            url: String::new(),
            timeout_secs: 15,
        }
    }
}

impl FinanceConfig {
    /// The API's base URL in force, without a trailing slash.
    pub fn base_url(&self) -> Option<String> {
        let url = self.url.trim();
        let url = if url.is_empty() {
            self.provider?.default_url()
        } else {
            url
        };
        Some(url.trim_end_matches('/').to_owned())
    }

    /// One line for `hermes doctor` and `hermes config check`.
    pub fn summary(&self) -> String {
        match (self.provider, self.base_url()) {
            (Some(p), Some(url)) => format!("{} at {}", p.label(), host_of(&url)),
            _ => {
                "not configured ([tools.finance] provider): the market tools are not offered".into()
            }
        }
    }

    pub(super) fn overlay(&mut self, env: &dyn EnvSource) {
        if self.api_key.is_empty()
            && let Some(v) = self.provider.and_then(|p| env.var(p.key_env()))
        {
            self.api_key = Secret::new(v.trim());
        }
    }

    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| {
            Err(ConfigError::invalid(
                file,
                &format!("tools.finance.{key}"),
                problem,
            ))
        };
        if self.timeout_secs == 0 {
            return bad("timeout_secs", "must be at least 1".into());
        }
        if !self.url.trim().is_empty()
            && let Err(e) = check_http_url(self.url.trim())
        {
            return bad("url", e);
        }
        let Some(provider) = self.provider else {
            if !self.api_key.is_empty() || !self.url.trim().is_empty() {
                return bad(
                    "provider",
                    "is missing: name the market data API the key or URL is for (\"finnhub\")"
                        .into(),
                );
            }
            return Ok(());
        };
        if self.api_key.is_empty() {
            return bad(
                "api_key",
                format!(
                    "is required for {}: set it here or in the environment variable {}",
                    provider.label(),
                    provider.key_env()
                ),
            );
        }
        Ok(())
    }
}

/// The host (and port) of a URL, for summaries (never its path or credentials).
fn host_of(url: &str) -> String {
    super::host_and_port(url).unwrap_or_else(|| "(an unreadable URL)".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web(toml_text: &str) -> WebSearchConfig {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn a_search_provider_needs_its_key_or_its_url() {
        let err = web("provider = \"brave\"").validate(None).unwrap_err();
        assert!(
            err.to_string().contains("tools.web_search.api_key")
                && err.to_string().contains("BRAVE_SEARCH_API_KEY"),
            "{err}"
        );
        let err = web("provider = \"searxng\"").validate(None).unwrap_err();
        assert!(err.to_string().contains("tools.web_search.url"), "{err}");
        web("provider = \"searxng\"\nurl = \"http://127.0.0.1:8888/\"")
            .validate(None)
            .unwrap();
        let err = web("api_key = \"tvly-abcdef\"").validate(None).unwrap_err();
        assert!(err.to_string().contains("provider"), "{err}");
        let err = web("provider = \"tavily\"\napi_key = \"k-123456\"\nmax_results = 21")
            .validate(None)
            .unwrap_err();
        assert!(err.to_string().contains("max_results"), "{err}");
    }

    #[test]
    fn keys_come_from_the_environment_when_the_file_has_none() {
        let mut c = web("provider = \"tavily\"");
        c.overlay(&[("TAVILY_API_KEY", " tvly-from-env ")]);
        assert_eq!(c.api_key.expose(), "tvly-from-env");
        c.validate(None).unwrap();
        assert_eq!(c.base_url().as_deref(), Some("https://api.tavily.com"));
        let mut f: FinanceConfig = toml::from_str("provider = \"finnhub\"").unwrap();
        assert!(
            f.validate(None)
                .unwrap_err()
                .to_string()
                .contains("FINNHUB_API_KEY")
        );
        f.overlay(&[("FINNHUB_API_KEY", "fh-key-123")]);
        f.validate(None).unwrap();
        assert_eq!(f.base_url().as_deref(), Some("https://finnhub.io/api/v1"));
        assert_eq!(f.summary(), "Finnhub at finnhub.io");
    }

    #[test]
    fn unconfigured_sections_say_the_tools_are_not_offered() {
        assert!(WebSearchConfig::default().summary().contains("not offered"));
        assert!(FinanceConfig::default().summary().contains("not offered"));
        assert!(WebSearchConfig::default().base_url().is_none());
    }
}
