//! The finance toolset: `market_quote`, `market_news` and `company_profile`, answered by one
//! configured market data provider (`[tools.finance]`; Finnhub, whose REST API is documented
//! and has a free tier).
//!
//! The tools are in [`Category::Finance`](crate::policy::Category::Finance), so at the default level `auto` each call is confirmed
//! by the person before anything is sent to the provider. Answers are cached for a short time
//! (quotes a minute, news five minutes, company profiles a day; see [`CacheTimes`]). Every
//! figure shown carries its source and a time: a quote the exchange time of its last trade,
//! everything else the time it was fetched (the original fetch when it comes from the cache).
//! Without a configured provider the tools are not offered to the model; called anyway, they
//! say what the operator has to set.

mod cache;
mod finnhub;
mod tools;

use std::sync::Arc;
use std::time::Duration;

pub use finnhub::CacheTimes;
pub use tools::{CompanyProfile, MarketNews, MarketQuote};

use self::finnhub::Finnhub;
use super::api_client::ApiClient;
use super::{Tool, ToolError};
use crate::config::{FinanceConfig, FinanceProvider, Secret};

/// Which provider the finance tools ask, and how.
#[derive(Debug, Clone)]
pub struct FinanceSettings {
    /// None: no provider is configured and every call says so.
    pub provider: Option<FinanceProvider>,
    /// The API's base URL, without a trailing slash.
    pub base_url: String,
    pub api_key: Secret,
    /// Time for one request to the API.
    pub timeout: Duration,
    pub cache: CacheTimes,
}

impl FinanceSettings {
    pub fn from_config(c: &FinanceConfig) -> Self {
        FinanceSettings {
            provider: c.provider,
            base_url: c.base_url().unwrap_or_default(),
            api_key: c.api_key.clone(),
            timeout: Duration::from_secs(c.timeout_secs.max(1)),
            cache: CacheTimes::default(),
        }
    }
}

/// The provider the three tools share (one cache, one client).
pub(crate) struct Market {
    api: Option<Finnhub>,
    timeout: Duration,
}

impl Market {
    fn new(settings: FinanceSettings) -> Self {
        let api = settings.provider.map(|provider| match provider {
            FinanceProvider::Finnhub => Finnhub::new(
                ApiClient::new(
                    provider.label(),
                    "tools.finance.api_key",
                    settings.api_key.clone(),
                    settings.timeout,
                ),
                settings.base_url.clone(),
                settings.cache,
            ),
        });
        Market {
            api,
            timeout: settings.timeout,
        }
    }

    /// The provider, or the error that says none is configured.
    fn api(&self) -> Result<&Finnhub, ToolError> {
        self.api.as_ref().ok_or_else(|| {
            ToolError::Failed(
                "market data is not configured on this server: the operator can set \
                 [tools.finance] provider = \"finnhub\" and its api_key (or FINNHUB_API_KEY) in \
                 the configuration. Tell the person; do not guess prices or figures."
                    .into(),
            )
        })
    }

    /// A tool's timeout: two requests (quote and profile), each with a bounded wait on a rate
    /// limit and one retry.
    fn tool_timeout(&self) -> Duration {
        (self.timeout * 2 + super::api_client::MAX_RETRY_WAIT) * 2
    }
}

/// The three market tools, sharing one provider and cache.
pub fn finance_tools(settings: FinanceSettings) -> Vec<Arc<dyn Tool>> {
    let market = Arc::new(Market::new(settings));
    vec![
        Arc::new(MarketQuote::new(market.clone())),
        Arc::new(MarketNews::new(market.clone())),
        Arc::new(CompanyProfile::new(market)),
    ]
}

#[cfg(test)]
mod tests;
