//! The three search APIs `web_search` speaks, each as documented: the request it sends and the
//! answer it reads, normalised to [`Hit`]s.
//!
//! - Tavily: `POST {url}/search`, JSON body `{"query", "max_results"}`, key as
//!   `Authorization: Bearer`; answer `results[].title/url/content`.
//! - Brave Search: `GET {url}/res/v1/web/search?q=&count=`, key in `X-Subscription-Token`;
//!   answer `web.results[].title/url/description` (with `<strong>` marks around the terms).
//! - SearXNG: `GET {url}/search?q=&format=json` (the instance must allow the json format); no
//!   key; answer `results[].title/url/content`. It has no count parameter: results are cut here.

use reqwest::header::ACCEPT;
use serde::Deserialize;
use serde_json::json;

use crate::config::WebSearchProvider;
use crate::tools::ToolError;
use crate::tools::api_client::{ApiClient, url_with_query};

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// Tavily's and SearXNG's answer.
#[derive(Deserialize)]
struct Results {
    #[serde(default)]
    results: Vec<ContentItem>,
}

#[derive(Deserialize)]
struct ContentItem {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    content: String,
}

/// Brave's answer: web results are under `web` (absent when there are none).
#[derive(Deserialize)]
struct BraveAnswer {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveItem>,
}

#[derive(Deserialize)]
struct BraveItem {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    description: String,
}

/// Ask `provider` at `base` (no trailing slash) for `count` results of `query`.
pub async fn search(
    provider: WebSearchProvider,
    client: &ApiClient,
    base: &str,
    query: &str,
    count: usize,
) -> Result<Vec<Hit>, ToolError> {
    let hits: Vec<Hit> = match provider {
        WebSearchProvider::Tavily => {
            let url = format!("{base}/search");
            let body = json!({"query": query, "max_results": count});
            let key = client.key().expose();
            let answer: Results = client
                .fetch(|http| http.post(&url).bearer_auth(key).json(&body))
                .await?;
            answer.results.into_iter().map(ContentItem::hit).collect()
        }
        WebSearchProvider::Brave => {
            let count = count.to_string();
            let url = url_with_query(
                &format!("{base}/res/v1/web/search"),
                &[("q", query), ("count", count.as_str())],
            )?;
            let key = client.key().expose();
            let answer: BraveAnswer = client
                .fetch(|http| {
                    http.get(url.clone())
                        .header(ACCEPT, "application/json")
                        .header("X-Subscription-Token", key)
                })
                .await?;
            answer
                .web
                .map(|w| w.results)
                .unwrap_or_default()
                .into_iter()
                .map(|r| Hit {
                    title: plain(&r.title),
                    url: r.url,
                    snippet: plain(&r.description),
                })
                .collect()
        }
        WebSearchProvider::Searxng => {
            let url = url_with_query(
                &format!("{base}/search"),
                &[("q", query), ("format", "json")],
            )?;
            let answer: Results = client
                .fetch(|http| http.get(url.clone()).header(ACCEPT, "application/json"))
                .await?;
            answer.results.into_iter().map(ContentItem::hit).collect()
        }
    };
    Ok(hits.into_iter().take(count).collect())
}

impl ContentItem {
    fn hit(self) -> Hit {
        Hit {
            title: plain(&self.title),
            url: self.url,
            snippet: plain(&self.content),
        }
    }
}

/// Text without markup (Brave marks the terms with `<strong>`), entities decoded, on one line.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let opens_tag = c == '<'
            && chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '/' || *n == '!');
        match c {
            _ if opens_tag => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            _ => out.push(c),
        }
    }
    let decoded = out
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_dropped_and_entities_decoded() {
        assert_eq!(
            plain("The <strong>Rust</strong> &amp; its\n  <em>book</em> &quot;2024&quot;"),
            "The Rust & its book \"2024\""
        );
        assert_eq!(plain("a < b <3"), "a < b <3");
        assert_eq!(plain("x &amp;lt; y"), "x &lt; y");
    }
}
