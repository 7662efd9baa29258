//! Background reviews: after enough tool work in a session, a separate agent instance looks back
//! over the conversation and decides whether something is worth keeping — a skill (procedural
//! memory) or a memory entry. It has its own small budget, no person to ask (confirmations are
//! denied), cannot start further reviews, and nothing it says reaches the user.

use super::Agent;
use super::compress::transcript;
use super::outcome::{TurnControl, TurnOutcome};
use super::permissions::Permissions;
use super::run::Run;
use crate::llm::{ChatMessage, Usage};
use crate::policy::Role;
use crate::store::{SessionRow, StoreError};
use crate::tools::ToolContext;

/// Messages of the conversation a reviewer reads.
const REVIEW_MESSAGES: usize = 60;
/// Model calls a review may make.
const REVIEW_ITERATIONS: u32 = 8;

/// What a review looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewKind {
    /// A reusable approach worth a skill (or an outdated skill worth a patch).
    Skills,
    /// Facts about the user or lessons worth the memory files.
    Memory,
}

impl ReviewKind {
    pub const ALL: [ReviewKind; 2] = [ReviewKind::Skills, ReviewKind::Memory];

    fn tools(self) -> &'static [&'static str] {
        match self {
            ReviewKind::Skills => &["skills_list", "skill_view", "skill_manage"],
            ReviewKind::Memory => &["memory"],
        }
    }

    /// The tool whose use in a turn resets this review's counter.
    fn writer(self) -> &'static str {
        match self {
            ReviewKind::Skills => "skill_manage",
            ReviewKind::Memory => "memory",
        }
    }

    fn counter(self) -> &'static str {
        match self {
            ReviewKind::Skills => "review_skills_counter",
            ReviewKind::Memory => "review_memory_counter",
        }
    }

    fn prompt(self) -> &'static str {
        match self {
            ReviewKind::Skills => SKILLS_PROMPT,
            ReviewKind::Memory => MEMORY_PROMPT,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReviewKind::Skills => "skills",
            ReviewKind::Memory => "memory",
        }
    }
}

/// What the reviewer answers when there is nothing to keep.
pub const NOTHING_TO_SAVE: &str = "Nothing to save.";

const SKILLS_PROMPT: &str = "You review a conversation an AI assistant just had, to decide whether it worked out a \
non-trivial, reusable approach worth saving as a skill: a SKILL.md how-to that would make a similar future task \
faster or more reliable. First check the existing skills with skills_list (and skill_view where relevant). If the \
approach is new and reusable, create a skill with skill_manage: a lowercase-hyphenated name, a description that says \
precisely when to use it, then concise steps, commands, pitfalls and checks. If an existing skill was used and proved \
outdated or incomplete, patch it instead. Do not save one-off facts, trivial tasks or anything private. If nothing is \
worth saving, answer exactly: Nothing to save.";

const MEMORY_PROMPT: &str = "You review a conversation an AI assistant just had, to decide whether it revealed \
durable facts about the user (target \"user\": name, preferences, projects, circumstances) or lessons and notes worth \
remembering (target \"memory\"). Use the memory tool to add short, self-contained entries, or replace outdated ones; \
the files are small, so prefer replacing to piling up. Never store secrets, passwords or one-off details. If nothing \
is worth saving, answer exactly: Nothing to save.";

impl Agent {
    /// Count a finished turn's tool work; return the reviews now due (their counters reset).
    pub async fn reviews_due(
        &self,
        session: &SessionRow,
        tool_rounds: u32,
        tools_called: &[String],
    ) -> Result<Vec<ReviewKind>, StoreError> {
        let scope = format!("sid:{}", session.id);
        let mut due = Vec::new();
        for kind in ReviewKind::ALL {
            let interval = match kind {
                ReviewKind::Skills => self.config.skills.review_interval,
                ReviewKind::Memory => self.config.memory.review_interval,
            };
            if interval == 0 || !kind.tools().iter().all(|t| self.tools.get(t).is_some()) {
                continue;
            }
            let mut count: u32 = self
                .store
                .setting(&scope, kind.counter())
                .await?
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if tools_called.iter().any(|t| t == kind.writer()) {
                count = 0;
            } else {
                count += tool_rounds;
            }
            if count >= interval {
                due.push(kind);
                count = 0;
            }
            self.store
                .set_setting(&scope, kind.counter(), &count.to_string())
                .await?;
        }
        Ok(due)
    }

    /// Review the recent conversation of `session`. Returns the reviewer's final answer (for the
    /// log) and what it cost.
    pub async fn review(
        &self,
        session: &SessionRow,
        kind: ReviewKind,
        role: Role,
    ) -> Result<(String, Usage), StoreError> {
        let mut history = self.conversation(session.id).await?;
        let skip = history.len().saturating_sub(REVIEW_MESSAGES);
        history.drain(..skip);
        let messages = vec![
            ChatMessage::system(kind.prompt()),
            ChatMessage::user(format!(
                "The conversation to review:\n\n{}",
                transcript(&history)
            )),
        ];
        let perms = Permissions::load(
            &*self.store,
            self.config.level(session.key.platform),
            &session.key,
            session.id,
            None,
        )
        .await?;
        let mut run = Run {
            agent: self,
            session_id: None,
            tools: std::borrow::Cow::Borrowed(&self.tools),
            enabled: kind.tools().to_vec(),
            ctx: ToolContext {
                session: session.key.clone(),
                timezone: self.timezone.clone(),
                cancel: Default::default(),
                interaction: None,
                chat: None,
                role,
            },
            control: TurnControl::default(),
            perms,
            interaction: None,
            depth: 1,
            max_iterations: REVIEW_ITERATIONS,
            model: self
                .config
                .llm
                .auxiliary_model
                .clone()
                .unwrap_or_else(|| self.config.llm.model.clone()),
            extra_usage: Usage::default(),
            extra_iterations: 0,
            deltas: None,
            late_sent: Default::default(),
        };
        let report = Box::pin(run.drive(messages)).await?;
        let answer = match report.outcome {
            TurnOutcome::Answered(text) => text,
            TurnOutcome::BudgetExhausted(why) => format!("(stopped: {why})"),
            TurnOutcome::Cancelled => "(cancelled)".into(),
            TurnOutcome::Failed(e) => format!("(model failed: {e})"),
        };
        Ok((answer, report.usage))
    }
}
