//! Plan mode (`/plan <request>`, or a profile whose `mode` is `plan`): the agent first works
//! with read-only tools and answers with a numbered plan; the person approves, revises or
//! cancels it (buttons where the platform has them, words elsewhere); on approval the same
//! turn goes on with the session's own tools and level, the plan in its history. Nothing that
//! writes runs before the approval: the planning rounds may call only read tools.

use super::outcome::{TurnOutcome, TurnReport};
use super::prompt::repair_history;
use super::run::Run;
use crate::llm::ChatMessage;
use crate::store::StoreError;
use crate::tools::Category;

/// Added to the request a plan is made for.
pub const PLAN_INSTRUCTIONS: &str = "[Plan mode: do not carry this out yet. Look things up \
    with the read-only tools if that helps, then answer with a short numbered plan of the steps \
    you will take (the files you will write, the commands you will run, what you will send) and \
    nothing else. The person approves, revises or cancels it before anything is done.]";

/// How many times one request may be planned again.
const MAX_REVISIONS: usize = 5;

/// The choices offered under a plan.
const CHOICES: [&str; 3] = ["Approve", "Revise", "Cancel"];

/// What the person said to a plan.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Approve,
    Revise(String),
    Cancel,
}

/// A typed or pressed answer as a verdict; any other text asks for a revision with it.
fn verdict(answer: &str) -> Verdict {
    let a = answer.trim();
    let word = a
        .trim_start_matches('/')
        .trim_end_matches(['.', '!'])
        .to_lowercase();
    match word.as_str() {
        "approve" | "approved" | "yes" | "y" | "ok" | "okay" | "go" | "go ahead" | "do it"
        | "👍" => Verdict::Approve,
        "cancel" | "no" | "n" | "stop" | "abort" => Verdict::Cancel,
        "revise" => Verdict::Revise(String::new()),
        _ => Verdict::Revise(a.to_owned()),
    }
}

/// Whether a tool may run before a plan is approved: reads only, and nothing that hands work
/// to another agent or sends something out.
pub fn may_run_while_planning(name: &str, category: Category) -> bool {
    category == Category::Read && !matches!(name, "delegate_task" | "send_file")
}

impl Run<'_> {
    /// A planned turn: plan (read-only), ask, then carry out, re-plan or stop.
    pub async fn drive_planned(
        &mut self,
        messages: Vec<ChatMessage>,
    ) -> Result<TurnReport, StoreError> {
        let Some(session_id) = self.session_id else {
            return self.drive(messages).await;
        };
        let system = messages.first().cloned();
        let all_tools = self.enabled.clone();
        let deltas = self.deltas.take();
        self.enabled = all_tools
            .iter()
            .copied()
            .filter(|name| {
                self.tools
                    .get(name)
                    .is_some_and(|t| may_run_while_planning(name, t.spec().category))
            })
            .collect();
        let mut total = TurnReport::empty();
        let mut messages = messages;
        let mut revisions = 0;
        loop {
            let report = self.drive(messages).await?;
            let plan = match &report.outcome {
                TurnOutcome::Answered(plan) => plan.clone(),
                _ => return Ok(total.then(report)),
            };
            total = total.then(report);
            let Some(person) = self.interaction.clone() else {
                // Nobody can approve (a scheduled job): the plan is the answer.
                return Ok(total.with_outcome(TurnOutcome::Answered(plan)));
            };
            // The plan is part of the conversation whatever the answer.
            self.agent
                .store
                .append_messages(session_id, vec![ChatMessage::assistant(plan.clone())])
                .await?;
            let choices: Vec<String> = CHOICES.iter().map(|c| (*c).to_owned()).collect();
            let question =
                format!("📋 Plan:\n\n{plan}\n\nApprove, revise (say what to change) or cancel?");
            let answer = tokio::select! {
                a = person.ask(&question, &choices) => a,
                _ = self.control.stop.cancelled() => None,
            };
            let next_user = match answer.as_deref().map(verdict) {
                None => {
                    let note = "(The plan was not approved in time.)";
                    return self.end(session_id, total, note, "⏸ The plan was not approved in time, so nothing was done. Say \"go ahead\" to carry it out, or tell me what to change.").await;
                }
                Some(Verdict::Cancel) => {
                    let note = "Cancel the plan; do nothing.";
                    return self
                        .end(
                            session_id,
                            total,
                            note,
                            "✖ Plan cancelled; nothing was done.",
                        )
                        .await;
                }
                Some(Verdict::Approve) => {
                    self.enabled = all_tools;
                    self.deltas = deltas;
                    let go = ChatMessage::user(
                        "✅ Plan approved. Carry it out now, step by step.".to_owned(),
                    );
                    self.agent
                        .store
                        .append_messages(session_id, vec![go])
                        .await?;
                    let messages = self.reload(session_id, system).await?;
                    let report = self.drive(messages).await?;
                    return Ok(total.then(report));
                }
                Some(Verdict::Revise(_)) if revisions >= MAX_REVISIONS => {
                    let answer = format!(
                        "I stopped after {MAX_REVISIONS} revisions of the plan; nothing was done. Send the request again with what you want."
                    );
                    return self
                        .end(session_id, total, "Revise the plan once more.", &answer)
                        .await;
                }
                Some(Verdict::Revise(text)) => {
                    let text = if text.is_empty() {
                        let asked = person.ask("What should change in the plan?", &[]).await;
                        asked.unwrap_or_default()
                    } else {
                        text
                    };
                    if text.trim().is_empty() {
                        let note = "(No change to the plan was given.)";
                        return self
                            .end(
                                session_id,
                                total,
                                note,
                                "⏸ No change was given, so nothing was done.",
                            )
                            .await;
                    }
                    revisions += 1;
                    format!("Revise the plan: {}\n\n{PLAN_INSTRUCTIONS}", text.trim())
                }
            };
            self.agent
                .store
                .append_messages(session_id, vec![ChatMessage::user(next_user)])
                .await?;
            messages = self.reload(session_id, system.clone()).await?;
        }
    }

    /// End the turn without carrying the plan out: the person's answer (`said`) goes into the
    /// history after the plan, so the conversation keeps alternating, and `answer` is the reply.
    async fn end(
        &self,
        session_id: i64,
        total: TurnReport,
        said: &str,
        answer: &str,
    ) -> Result<TurnReport, StoreError> {
        self.agent
            .store
            .append_messages(session_id, vec![ChatMessage::user(said.to_owned())])
            .await?;
        Ok(total.with_outcome(TurnOutcome::Answered(answer.to_owned())))
    }

    /// The system prompt and the stored history, as the next model call sees them.
    async fn reload(
        &self,
        session_id: i64,
        system: Option<ChatMessage>,
    ) -> Result<Vec<ChatMessage>, StoreError> {
        let mut messages: Vec<ChatMessage> = system.into_iter().collect();
        messages.extend(repair_history(self.agent.conversation(session_id).await?));
        Ok(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_to_a_plan() {
        assert_eq!(verdict("Approve"), Verdict::Approve);
        assert_eq!(verdict(" yes! "), Verdict::Approve);
        assert_eq!(verdict("/cancel"), Verdict::Cancel);
        assert_eq!(verdict("Revise"), Verdict::Revise(String::new()));
        assert_eq!(
            verdict("use /tmp instead"),
            Verdict::Revise("use /tmp instead".into())
        );
    }

    #[test]
    fn only_reads_run_while_planning() {
        assert!(may_run_while_planning("read_file", Category::Read));
        assert!(!may_run_while_planning("write_file", Category::Write));
        assert!(!may_run_while_planning("terminal", Category::System));
        assert!(!may_run_while_planning("delegate_task", Category::Read));
        assert!(!may_run_while_planning("market_quote", Category::Finance));
    }
}
