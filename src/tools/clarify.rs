//! `clarify`: ask the user a question in the chat and wait for the answer.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The question, short and specific.
    question: String,
    /// Up to 4 short answers to offer as buttons (the user may still type anything).
    #[serde(default)]
    choices: Vec<String>,
}

/// Asks the person behind the turn.
pub struct Clarify {
    spec: ToolSpec,
    wait: Duration,
}

impl Clarify {
    /// `wait`: how long to wait for an answer.
    pub fn new(wait: Duration) -> Self {
        Clarify {
            wait,
            spec: ToolSpec {
                name: "clarify",
                description: "Ask the user a question and wait for the answer. Use it only when you \
                    cannot proceed sensibly without their decision (ambiguous request, a choice \
                    between options with real consequences); otherwise make a reasonable choice and \
                    say so. Offer short `choices` when the answer is one of a few options.",
                category: Category::Read,
                parallel_safe: false,
                parameters: schema_of::<Args>(),
                timeout: wait + Duration::from_secs(10),
                max_output_chars: 4_000,
            },
        }
    }
}

#[async_trait]
impl Tool for Clarify {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        if args.question.trim().is_empty() {
            return Err(ToolError::InvalidArguments("`question` is empty".into()));
        }
        if args.choices.len() > 4 {
            return Err(ToolError::InvalidArguments("at most 4 choices".into()));
        }
        let Some(person) = &ctx.interaction else {
            return Err(ToolError::Failed(
                "nobody can be asked here (background task); decide yourself and explain your choice".into(),
            ));
        };
        match person.ask(args.question.trim(), &args.choices).await {
            Some(answer) => Ok(format!("The user answered: {answer}")),
            None => Ok(format!(
                "The user did not answer within {} seconds. Continue with your best judgement and say what you assumed.",
                self.wait.as_secs()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::policy::Answer;
    use crate::tools::{ConfirmRequest, Interaction};

    struct Replies(Option<String>);

    #[async_trait]
    impl Interaction for Replies {
        async fn confirm(&self, _: &ConfirmRequest) -> Option<Answer> {
            None
        }
        async fn ask(&self, question: &str, choices: &[String]) -> Option<String> {
            assert_eq!((question, choices.len()), ("Which one?", 2));
            self.0.clone()
        }
        async fn notify(&self, _: &str) {}
    }

    #[tokio::test]
    async fn asks_the_person_or_explains_why_not() {
        let tool = Clarify::new(Duration::from_secs(5));
        let args = json!({"question": "Which one?", "choices": ["a", "b"]});
        let mut ctx = ToolContext::for_tests();
        assert!(matches!(
            tool.call(args.clone(), &ctx).await,
            Err(ToolError::Failed(_))
        ));
        ctx.interaction = Some(Arc::new(Replies(Some("b".into()))));
        assert_eq!(
            tool.call(args.clone(), &ctx).await.unwrap(),
            "The user answered: b"
        );
        ctx.interaction = Some(Arc::new(Replies(None)));
        assert!(
            tool.call(args, &ctx)
                .await
                .unwrap()
                .contains("did not answer within 5 seconds")
        );
    }
}
