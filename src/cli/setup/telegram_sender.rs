//! "The account that just wrote to the bot": read the sender of the newest private message
//! with `getUpdates`, without confirming any update.
//!
//! `getUpdates` is called without `offset`, so Telegram keeps every update (its queue only
//! moves when a later call passes `offset`): the daemon, once started, receives the same
//! messages, including the one written for this step, and answers it as the first message of
//! the newly allowed person. Confirming instead would also drop every older update still
//! waiting (other people's messages) before the daemon ever saw them. `allowed_updates` is not
//! sent either, because Telegram remembers it for the bot's later polls.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::Secret;

/// Who wrote.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sender {
    pub id: i64,
    pub name: String,
    pub username: Option<String>,
}

impl std::fmt::Display for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.username {
            Some(u) => write!(f, "{} (@{u}, id {})", self.name, self.id),
            None => write!(f, "{} (id {})", self.name, self.id),
        }
    }
}

/// The Bot API as `getUpdates` is read here.
pub(super) struct Updates {
    http: reqwest::Client,
    url: String,
    token: Secret,
}

impl Updates {
    pub(super) fn new(api_url: &str, token: &Secret) -> Result<Updates, String> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Updates {
            http,
            url: format!(
                "{}/bot{}/getUpdates",
                api_url.trim_end_matches('/'),
                token.expose()
            ),
            token: token.clone(),
        })
    }

    /// The highest update id waiting now (0 if none): messages newer than it are the ones
    /// written after the user was asked.
    pub(super) async fn newest_id(&self) -> Result<i64, String> {
        let updates = self.get(0).await?;
        Ok(updates.iter().filter_map(update_id).max().unwrap_or(0))
    }

    /// Wait up to `wait` for a private message in an update newer than `after`; its sender.
    pub(super) async fn wait_for_sender(
        &self,
        after: i64,
        wait: Duration,
    ) -> Result<Option<Sender>, String> {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            let updates = self.get(if after == 0 { 10 } else { 0 }).await?;
            if let Some(sender) = newest_sender(&updates, after) {
                return Ok(Some(sender));
            }
            if after != 0 {
                // Older updates wait in the queue, so a long poll would return at once.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        Ok(None)
    }

    async fn get(&self, timeout_secs: u32) -> Result<Vec<Value>, String> {
        let scrub = |e: String| self.token.scrub(&e);
        let resp = self
            .http
            .get(format!("{}?timeout={timeout_secs}", self.url))
            .send()
            .await
            .map_err(|e| scrub(format!("Telegram did not answer: {e}")))?;
        let status = resp.status();
        let body: Value = resp
            .json()
            .await
            .map_err(|e| scrub(format!("Telegram's answer is not JSON: {e}")))?;
        if body["ok"].as_bool() != Some(true) {
            let description = body["description"].as_str().unwrap_or("no description");
            let hint = if status.as_u16() == 409 {
                " (a webhook is set or another process polls this bot; type the id instead)"
            } else {
                ""
            };
            return Err(scrub(format!(
                "Telegram refused getUpdates ({status}): {description}{hint}"
            )));
        }
        Ok(body["result"].as_array().cloned().unwrap_or_default())
    }
}

fn update_id(u: &Value) -> Option<i64> {
    u["update_id"].as_i64()
}

/// The sender of the newest private message, from a person, in an update after `after`.
fn newest_sender(updates: &[Value], after: i64) -> Option<Sender> {
    updates
        .iter()
        .filter(|u| update_id(u).is_some_and(|id| id > after))
        .filter_map(|u| {
            let m = &u["message"];
            let from = &m["from"];
            let private = m["chat"]["type"].as_str() == Some("private");
            let person = from["is_bot"].as_bool() == Some(false);
            if !(private && person) {
                return None;
            }
            Some(Sender {
                id: from["id"].as_i64()?,
                name: [from["first_name"].as_str(), from["last_name"].as_str()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" "),
                username: from["username"].as_str().map(str::to_owned),
            })
        })
        .next_back()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_newest_private_message_from_a_person_after_the_mark_is_the_sender() {
        let msg = |id: i64, from: i64, chat: &str, bot: bool| {
            json!({"update_id": id, "message": {"message_id": id, "date": 0,
                "chat": {"id": from, "type": chat},
                "from": {"id": from, "is_bot": bot, "first_name": "P", "username": format!("u{from}")},
                "text": "hi"}})
        };
        let updates = vec![
            msg(5, 100, "private", false),
            msg(6, 200, "private", false),
            msg(7, -300, "supergroup", false),
            msg(8, 400, "private", true),
        ];
        let s = newest_sender(&updates, 5).unwrap();
        assert_eq!(s.id, 200);
        assert_eq!(s.to_string(), "P (@u200, id 200)");
        assert_eq!(newest_sender(&updates, 6), None);
    }
}
