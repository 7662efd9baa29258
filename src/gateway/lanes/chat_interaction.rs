//! The chat as the agent's [`Interaction`]: confirmations and questions posted through the
//! outbox (with buttons where the platform has them), answered by a button press or a reply that
//! the router hands back through the approval and question books.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{Button, Message, SessionKey};
use tokio::sync::oneshot;

use crate::agent::{ConfirmRequest, Interaction, TurnControl};
use crate::config::Config;
use crate::gateway::outbound::{outgoing, replies::replies};
use crate::gateway::{Reply, Shared};
use crate::policy::Answer;

/// The person behind one turn, in their chat.
pub(crate) struct ChatInteraction {
    pub shared: Arc<Shared>,
    /// The configuration the turn runs with.
    pub config: Arc<Config>,
    /// The message that started the turn: where to ask, and who may answer.
    pub to: Message,
    pub key: SessionKey,
    pub control: TurnControl,
    /// The turn's last inbox row: files sent by the turn are keyed by it and their number, so
    /// a turn replayed after a crash does not send them twice.
    pub turn: i64,
    pub files_sent: std::sync::atomic::AtomicU32,
}

impl ChatInteraction {
    fn buttons(&self) -> bool {
        self.shared
            .adapter(self.to.platform)
            .is_some_and(|a| a.capabilities().buttons)
    }

    /// Queue a message in the turn's chat (thread, reply) with an idempotency key.
    /// Long text (a big command to confirm) is split at the platform's limit like any answer;
    /// the buttons go under the last part. Returns the last part's key and text.
    async fn post(&self, text: String, buttons: Vec<Vec<Button>>, key: String) -> (String, String) {
        let mut rows = replies(&self.shared, &self.to, &text, &key);
        for (_, out) in rows.iter_mut() {
            // Not a reply to the user's message: a request of its own.
            out.reply_to = None;
        }
        let last = rows
            .last_mut()
            .map(|(_, out)| {
                out.buttons = buttons;
                (out.idempotency_key.clone(), out.text.clone())
            })
            .unwrap_or((key, text));
        match self.shared.store.outbox_enqueue(rows).await {
            Ok(()) => self.shared.outbox_signal.notify_one(),
            Err(e) => tracing::error!(error = %e, "cannot queue a message for the user"),
        }
        last
    }

    /// Wait for an answer, the timeout, or the end of the turn (an interrupt counts: the user
    /// moved on).
    async fn wait<T>(&self, rx: oneshot::Receiver<T>, timeout: Duration) -> Option<T> {
        tokio::select! {
            r = rx => r.ok(),
            _ = tokio::time::sleep(timeout) => None,
            _ = self.control.stop.cancelled() => None,
            _ = self.control.interrupt.cancelled() => None,
        }
    }

    /// Replace the request message's text (removing its buttons) once it is answered.
    fn settle(&self, key: String, text: String) {
        let shared = self.shared.clone();
        let (platform, chat) = (self.to.platform, self.to.chat.id.clone());
        tokio::spawn(async move {
            let Some(adapter) = shared.adapter(platform) else {
                return;
            };
            if let Ok(Some(sent)) = shared.store.outbox_sent_id(&key).await
                && let Err(e) = adapter
                    .edit(&chat, &hermes_adapter::SentId(sent), &text)
                    .await
            {
                tracing::debug!(error = %e, "cannot update an answered request");
            }
        });
    }
}

#[async_trait]
impl Interaction for ChatInteraction {
    async fn confirm(&self, request: &ConfirmRequest) -> Option<Answer> {
        let timeout = Duration::from_secs(self.config.policy.approval_timeout_secs);
        let detail = format!("{}\n{}", request.reason, request.arguments);
        let (pending, rx) = self.shared.approvals.open(
            self.key.clone(),
            self.to.sender.id.clone(),
            &request.tool,
            &detail,
        );
        let buttons = if self.buttons() {
            let b = |label: &str, a: Answer| Button {
                label: label.to_owned(),
                data: format!("ap:{}:{}", pending.id, a.code()),
            };
            vec![
                vec![
                    b("✅ Allow once", Answer::Once),
                    b("Allow for this session", Answer::Session),
                ],
                vec![
                    b("Always allow", Answer::Always),
                    b("❌ Deny", Answer::Deny),
                ],
            ]
        } else {
            Vec::new()
        };
        let text = request.describe(timeout.as_secs(), !buttons.is_empty());
        let key = format!("ap:{}", pending.id);
        let (last_key, last_text) = self.post(text, buttons, key).await;
        tracing::info!(tool = %request.tool, approval = %pending.id, "asked the user for confirmation");
        let answer = self.wait(rx, timeout).await;
        self.shared.approvals.close(&pending.id);
        let verdict = match answer {
            Some(Answer::Once) => "✅ Allowed once.",
            Some(Answer::Session) => "✅ Allowed for this session.",
            Some(Answer::Always) => "✅ Always allowed.",
            Some(Answer::Deny) => "❌ Denied.",
            None if self.control.stop.is_cancelled() || self.control.interrupt.is_cancelled() => {
                "❌ Cancelled."
            }
            None => "⏱ No answer in time: denied.",
        };
        tracing::info!(tool = %request.tool, approval = %pending.id, verdict, "confirmation settled");
        self.settle(last_key, format!("{last_text}\n\n{verdict}"));
        answer
    }

    async fn ask(&self, question: &str, choices: &[String]) -> Option<String> {
        let timeout = Duration::from_secs(self.config.policy.clarify_timeout_secs);
        let (pending, rx) = self.shared.questions.open(
            self.key.clone(),
            self.to.sender.id.clone(),
            "question",
            question,
        );
        let buttons = if self.buttons() && !choices.is_empty() {
            vec![
                choices
                    .iter()
                    .enumerate()
                    .map(|(i, c)| Button {
                        label: c.clone(),
                        data: format!("cl:{}:{i}", pending.id),
                    })
                    .collect(),
            ]
        } else {
            Vec::new()
        };
        let mut text = format!("❓ {question}");
        if buttons.is_empty() && !choices.is_empty() {
            text.push_str(&format!("\n({})", choices.join(" / ")));
        }
        self.post(text, buttons, format!("cl:{}", pending.id)).await;
        let answer = self.wait(rx, timeout).await;
        self.shared.questions.close(&pending.id);
        answer.map(|a| match a {
            Reply::Choice(i) => choices.get(i).cloned().unwrap_or_default(),
            Reply::Text(t) => t,
        })
    }

    async fn notify(&self, text: &str) {
        let key = format!("note:{}:{}", self.key, hermes_adapter::now_millis());
        self.post(text.to_owned(), Vec::new(), key).await;
    }

    async fn send_file(&self, path: &std::path::Path, caption: &str) -> Result<String, String> {
        let platform = self.to.platform;
        let max = self
            .shared
            .adapter(platform)
            .map_or(0, |a| a.max_upload_bytes());
        if max == 0 {
            return Err(format!(
                "{} conversations cannot receive files from hermes yet; say where the file is instead",
                platform.as_str()
            ));
        }
        let n = self
            .files_sent
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let key = format!("file:{}:{n}", self.turn);
        let caption = caption.trim();
        // A long caption goes out as a message of its own, before the file.
        let mut rows = if caption.chars().count() > hermes_adapter::MAX_CAPTION_CHARS {
            replies(&self.shared, &self.to, caption, &format!("{key}:text"))
        } else {
            Vec::new()
        };
        let home = self.config.home.clone();
        let (src, k) = (path.to_owned(), key.clone());
        let file = tokio::task::spawn_blocking(move || outgoing::stage(&home, &k, &src, max))
            .await
            .map_err(|e| format!("cannot stage the file: {e}"))??;
        let mut out = hermes_adapter::Outbound::text(
            self.to.chat.id.clone(),
            if rows.is_empty() { caption } else { "" },
            key,
        );
        out.thread = self.to.thread.clone();
        let what = format!("{} ({}, {} bytes)", file.name, file.mime, file.size);
        out.file = Some(file);
        rows.push((platform, out));
        self.shared
            .store
            .outbox_enqueue(rows)
            .await
            .map_err(|e| format!("cannot queue the file: {e}"))?;
        self.shared.outbox_signal.notify_one();
        tracing::info!(turn = self.turn, n, "queued a file for the user");
        Ok(format!("sent {what} to the user"))
    }
}
