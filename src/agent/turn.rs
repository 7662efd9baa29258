//! One agent turn over a stored session: history in, answer out.

use std::sync::Arc;

use hermes_adapter::UserId;

use super::outcome::{TurnControl, TurnReport};
use super::prompt::{Setting, repair_history, system_prompt_with};
use super::run::Run;
use super::{Agent, Interaction, Permissions};
use crate::llm::{ChatMessage, Usage};
use crate::policy::Role;
use crate::store::{SessionRow, StoreError};
use crate::tools::ToolContext;

/// What to run a turn on.
pub struct TurnInput<'a> {
    pub session: &'a SessionRow,
    pub setting: Setting,
    /// New user messages: (inbox row id, text as the model should see it). Appended to the
    /// history unless already there (a turn re-run after a crash). Messages without an inbox
    /// row (the terminal chat) have no id.
    pub new_messages: Vec<NewMessage>,
    pub control: TurnControl,
    /// Who asked (their standing grants apply; only they can confirm).
    pub requester: Option<UserId>,
    /// Their role: what the tools of this turn may change for everyone.
    pub role: Role,
    /// The person to ask for confirmations and answers; `None` denies every confirmation.
    pub interaction: Option<Arc<dyn Interaction>>,
    /// Where to stream the answer's text as it is written (see [`crate::llm::DeltaSink`]).
    pub deltas: Option<crate::llm::DeltaSink>,
    /// The chat the turn answers in (tools that act later, like scheduled jobs, deliver there).
    pub chat: Option<crate::tools::ChatRef>,
    /// Set once the user was told the answer will be late; shared by the retries of the same
    /// messages during a provider outage, so they are told once.
    pub late_notice: Arc<std::sync::atomic::AtomicBool>,
    /// `/plan`: plan first and carry out only what the person approves (a profile whose mode is
    /// `plan` does this for every request).
    pub plan: bool,
}

/// A user message a turn answers.
#[derive(Debug, Clone, Default)]
pub struct NewMessage {
    /// Its inbox row (none for the terminal chat).
    pub inbox_id: Option<i64>,
    /// The text as the model should see it.
    pub text: String,
    /// Images for a vision model; only this turn's request carries them.
    pub images: Vec<crate::llm::Image>,
}

impl Agent {
    /// Run one turn. Store failures abort it (the inbox rows stay queued and are retried).
    pub async fn run_turn(&self, input: TurnInput<'_>) -> Result<TurnReport, StoreError> {
        let session = input.session;
        let profile = self.profile_of(&session.key).await?.map(|(_, p)| p);
        let plan = input.plan
            || profile.is_some_and(|p| p.mode == crate::config::AgentMode::Plan)
                && input.interaction.is_some();
        let mut new_messages = input.new_messages;
        if plan && let Some(last) = new_messages.last_mut() {
            last.text = format!("{}\n\n{}", last.text, super::plan::PLAN_INSTRUCTIONS);
        }
        if !new_messages.is_empty() {
            let rows = new_messages
                .iter()
                .map(|m| (m.inbox_id, m.text.clone()))
                .collect();
            self.store.append_inbox_messages(session.id, rows).await?;
        }
        let history = self.conversation(session.id).await?;
        let platform = session.key.platform;
        let toolsets = profile
            .and_then(|p| p.toolsets.as_deref())
            .unwrap_or(self.config.toolsets(platform));
        let mut enabled = crate::config::tools_in(toolsets);
        if input.interaction.is_none() {
            enabled.retain(|t| *t != "clarify");
        }
        // Tools whose service is not configured (web search, market data) are not offered.
        enabled.retain(|t| self.config.tools.is_configured(t));
        // A user's scheduled run cannot schedule more: unattended jobs would multiply.
        if input.setting.platform == hermes_adapter::Platform::Cron && !input.role.is_operator() {
            enabled.retain(|t| *t != "cronjob");
        }
        let tools = self.session_tools(session, &mut enabled).await?;
        let frozen = self.frozen_context(session, &enabled, profile).await?;
        let mut messages = vec![ChatMessage::system(system_prompt_with(
            input.setting,
            profile.and_then(|p| p.system_prompt.as_deref()).or(self
                .config
                .agent
                .system_prompt
                .as_deref()),
            &enabled,
            frozen.as_deref(),
        ))];
        messages.extend(repair_history(history));
        attach_images(&mut messages, new_messages);
        let perms = Permissions::load(
            &*self.store,
            profile
                .and_then(|p| p.level)
                .map(|l| l.min(self.config.policy.max_level))
                .unwrap_or(self.config.level(platform)),
            &session.key,
            session.id,
            input.requester.as_ref(),
        )
        .await?;
        let mut run = Run {
            agent: self,
            session_id: Some(session.id),
            tools,
            enabled,
            ctx: ToolContext {
                session: session.key.clone(),
                timezone: self.timezone.clone(),
                cancel: input.control.stop.clone(),
                interaction: input.interaction.clone(),
                chat: input.chat.clone(),
                role: input.role,
            },
            control: input.control,
            perms,
            interaction: input.interaction,
            depth: 0,
            max_iterations: self.config.agent.max_iterations,
            model: session
                .model
                .clone()
                .or_else(|| profile.and_then(|p| p.model.clone()))
                .unwrap_or_else(|| self.config.llm.model.clone()),
            extra_usage: Usage::default(),
            extra_iterations: 0,
            deltas: input.deltas,
            late_sent: input.late_notice.clone(),
        };
        if plan {
            run.drive_planned(messages).await
        } else {
            run.drive(messages).await
        }
    }
}

/// The setting (scope: the session key) naming the profile chosen in the chat by `/profile`.
pub const PROFILE_SETTING: &str = "profile";

impl Agent {
    /// The profile a session key runs with (see [`crate::config::Config::profile_for`]).
    pub async fn profile_of(
        &self,
        key: &hermes_adapter::SessionKey,
    ) -> Result<Option<(&str, &crate::config::Profile)>, StoreError> {
        if self.config.profiles.is_empty() {
            return Ok(None);
        }
        let chosen = self
            .store
            .setting(&crate::store::key_scope(key), PROFILE_SETTING)
            .await?;
        Ok(self.config.profile_for(key, chosen.as_deref()))
    }
}

/// Give this turn's images to the user messages they came with (matched from the end by text;
/// stored history keeps only the text).
fn attach_images(messages: &mut [ChatMessage], new: Vec<NewMessage>) {
    for m in new.into_iter().rev().filter(|m| !m.images.is_empty()) {
        if let Some(target) = messages.iter_mut().rev().find(|c| {
            c.role == crate::llm::Role::User && c.content == m.text && c.images.is_empty()
        }) {
            target.images = m.images;
        }
    }
}
