//! Semantic checks of a loaded configuration, with errors that name the key.

use super::{Config, ConfigError};

impl Config {
    /// Semantic checks the types cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let file = self.source.as_deref();
        self.llm.validate(file)?;
        self.admin.validate(file)?;
        self.agent.validate(file)?;
        self.gateway.validate(file)?;
        self.access.validate(file)?;
        self.tools.validate(file)?;
        self.policy.validate(file)?;
        self.sessions.validate(file)?;
        for platform in self.platforms() {
            platform.validate(file)?;
        }
        Ok(())
    }
}

/// An http(s) URL with a host, or what is wrong with it.
pub(super) fn check_http_url(value: &str) -> Result<(), String> {
    match reqwest::Url::parse(value) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        Ok(_) => Err(format!("`{value}` must be an http:// or https:// URL")),
        Err(e) => Err(format!("`{value}` is not a URL: {e}")),
    }
}
