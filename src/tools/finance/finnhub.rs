//! Finnhub's REST API (<https://finnhub.io/docs/api>) as the finance tools use it: the
//! documented answers of `/quote`, `/stock/profile2`, `/company-news` and `/news`, read through
//! the [`TtlCache`]. The key goes in the `X-Finnhub-Token` header, never in the URL.

use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::cache::{Cached, TtlCache};
use crate::tools::ToolError;
use crate::tools::api_client::{ApiClient, url_with_query};

/// `GET /quote?symbol=`: current price `c`, change `d`, percent change `dp`, day high `h`, low
/// `l`, open `o`, previous close `pc`, and `t`, the time of the last trade (Unix seconds). An
/// unknown symbol answers zeros (and nulls for `d`, `dp`).
#[derive(Debug, Clone, Deserialize)]
pub struct Quote {
    pub c: Option<f64>,
    pub d: Option<f64>,
    pub dp: Option<f64>,
    pub h: Option<f64>,
    pub l: Option<f64>,
    pub o: Option<f64>,
    pub pc: Option<f64>,
    pub t: Option<i64>,
}

impl Quote {
    /// Finnhub's way of saying it knows no such symbol.
    pub fn is_empty(&self) -> bool {
        self.c.unwrap_or(0.0) == 0.0 && self.t.unwrap_or(0) == 0
    }
}

/// `GET /stock/profile2?symbol=`: `{}` for an unknown symbol. `marketCapitalization` and
/// `shareOutstanding` are in millions.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Profile {
    pub name: String,
    pub ticker: String,
    pub exchange: String,
    pub currency: String,
    pub country: String,
    pub ipo: String,
    pub weburl: String,
    pub finnhub_industry: String,
    pub market_capitalization: Option<f64>,
    pub share_outstanding: Option<f64>,
}

impl Profile {
    pub fn is_empty(&self) -> bool {
        self.name.is_empty() && self.ticker.is_empty()
    }
}

/// One item of `GET /company-news` and `GET /news`; `datetime` in Unix seconds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NewsItem {
    pub datetime: i64,
    pub headline: String,
    pub source: String,
    pub summary: String,
    pub url: String,
}

/// How long answers are kept.
#[derive(Debug, Clone, Copy)]
pub struct CacheTimes {
    pub quote: Duration,
    pub news: Duration,
    pub profile: Duration,
}

impl Default for CacheTimes {
    fn default() -> Self {
        CacheTimes {
            quote: Duration::from_secs(60),
            news: Duration::from_secs(5 * 60),
            profile: Duration::from_secs(24 * 3600),
        }
    }
}

/// A typed answer and whether it came from the cache.
pub struct Answer<T> {
    pub data: T,
    pub fetched_at: jiff::Timestamp,
    pub cached: bool,
}

/// The API at one base URL with one key, and its cache.
pub struct Finnhub {
    pub client: ApiClient,
    pub base_url: String,
    pub ttl: CacheTimes,
    cache: TtlCache,
}

impl Finnhub {
    pub fn new(client: ApiClient, base_url: String, ttl: CacheTimes) -> Self {
        Finnhub {
            client,
            base_url,
            ttl,
            cache: TtlCache::default(),
        }
    }

    pub async fn quote(&self, symbol: &str) -> Result<Answer<Quote>, ToolError> {
        self.get("/quote", &[("symbol", symbol)], self.ttl.quote)
            .await
    }

    pub async fn profile(&self, symbol: &str) -> Result<Answer<Profile>, ToolError> {
        self.get("/stock/profile2", &[("symbol", symbol)], self.ttl.profile)
            .await
    }

    /// News about `symbol` published between the two dates (`YYYY-MM-DD`, inclusive).
    pub async fn company_news(
        &self,
        symbol: &str,
        from: &str,
        to: &str,
    ) -> Result<Answer<Vec<NewsItem>>, ToolError> {
        let params = [("symbol", symbol), ("from", from), ("to", to)];
        self.get("/company-news", &params, self.ttl.news).await
    }

    /// The latest general market news.
    pub async fn general_news(&self) -> Result<Answer<Vec<NewsItem>>, ToolError> {
        self.get("/news", &[("category", "general")], self.ttl.news)
            .await
    }

    /// `path` with `params`, from the cache when fresh; a new answer is cached only once it
    /// reads as `T`.
    async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        params: &[(&str, &str)],
        ttl: Duration,
    ) -> Result<Answer<T>, ToolError> {
        let key = cache_key(path, params);
        if let Some(hit) = self.cache.get(&key, ttl) {
            return Ok(Answer {
                data: self.read(path, hit.value.clone())?,
                fetched_at: hit.fetched_at,
                cached: true,
            });
        }
        let url = url_with_query(&format!("{}{path}", self.base_url), params)?;
        let token = self.client.key().expose();
        let value: serde_json::Value = self
            .client
            .fetch(|http| http.get(url.clone()).header("X-Finnhub-Token", token))
            .await?;
        let data = self.read(path, value.clone())?;
        let Cached { fetched_at, .. } = self.cache.put(key, value);
        Ok(Answer {
            data,
            fetched_at,
            cached: false,
        })
    }

    /// `value` as `T`, or an error saying the answer is not the documented one.
    fn read<T: DeserializeOwned>(
        &self,
        path: &str,
        value: serde_json::Value,
    ) -> Result<T, ToolError> {
        serde_json::from_value(value).map_err(|e| {
            ToolError::Failed(format!(
                "{} answered {path} with JSON that is not what its API documents ({e}); the \
                 service may be having problems, try again later",
                self.client.service()
            ))
        })
    }
}

fn cache_key(path: &str, params: &[(&str, &str)]) -> String {
    let mut key = path.to_owned();
    for (k, v) in params {
        key.push_str(&format!("&{k}={v}"));
    }
    key
}
