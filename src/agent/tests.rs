//! Unit tests of the turn loop with a scripted model: policy decisions and confirmations,
//! parallel waves, ordered writes, subagents, budgets.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{Platform, SessionKey};
use serde_json::{Value, json};
use tokio::sync::Barrier;

use super::*;
use crate::llm::{ChatRequest, ChatResponse, FinishReason, LlmError, ToolCall, Usage};
use crate::policy::{Answer, Level};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec};

/// A model that answers from a script and records what it was asked.
#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<ChatResponse>>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Script {
    fn new(replies: Vec<ChatResponse>) -> Arc<Self> {
        Arc::new(Script {
            replies: Mutex::new(replies.into()),
            seen: Mutex::default(),
        })
    }
}

#[async_trait]
impl Provider for Script {
    fn describe(&self) -> String {
        "script".into()
    }
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.seen.lock().unwrap().push(req.clone());
        let next = self.replies.lock().unwrap().pop_front();
        Ok(next.unwrap_or_else(|| text("(script ended)")))
    }
    async fn probe(&self) -> Result<String, LlmError> {
        Ok(String::new())
    }
}

fn text(t: &str) -> ChatResponse {
    ChatResponse {
        content: t.into(),
        tool_calls: vec![],
        finish: FinishReason::Stop,
        usage: Usage {
            prompt_tokens: 100,
            completion_tokens: 10,
            cached_tokens: 0,
            cache_write_tokens: 0,
        },
        model: "m".into(),
    }
}

fn calls(list: &[(&str, Value)]) -> ChatResponse {
    let mut r = text("");
    r.tool_calls = list
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall {
            id: format!("c{i}-{name}"),
            name: (*name).into(),
            arguments: args.to_string(),
        })
        .collect();
    r
}

/// A test tool: records its calls; `wait_for_peer` makes it wait (up to 2 s) until a second
/// call of the same tool has started, so concurrency is observable.
struct Probe {
    spec: ToolSpec,
    log: Arc<Mutex<Vec<String>>>,
    barrier: Arc<Barrier>,
    wait_for_peer: bool,
}

fn probe(
    name: &'static str,
    category: Category,
    parallel: bool,
    wait: bool,
    log: &Arc<Mutex<Vec<String>>>,
) -> Arc<Probe> {
    Arc::new(Probe {
        spec: ToolSpec {
            name,
            description: "test",
            category,
            parallel_safe: parallel,
            parameters: json!({"type": "object"}),
            timeout: Duration::from_secs(5),
            max_output_chars: 1000,
        },
        log: log.clone(),
        barrier: Arc::new(Barrier::new(2)),
        wait_for_peer: wait,
    })
}

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn writes(&self, args: &Value) -> Vec<PathBuf> {
        args.get("path")
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .into_iter()
            .collect()
    }
    fn danger(&self, args: &Value) -> Option<String> {
        args.get("danger")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
    async fn call(&self, args: Value, _: &ToolContext) -> Result<String, ToolError> {
        let tag = args
            .get("tag")
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_owned();
        self.log.lock().unwrap().push(format!("start {tag}"));
        let together = if self.wait_for_peer {
            tokio::time::timeout(Duration::from_secs(2), self.barrier.wait())
                .await
                .is_ok()
        } else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            false
        };
        self.log.lock().unwrap().push(format!("end {tag}"));
        Ok(format!(
            "{} ran {tag}{}",
            self.spec.name,
            if together { " together" } else { "" }
        ))
    }
}

/// A person who answers every confirmation the same way and counts the questions.
struct Person {
    answer: Option<Answer>,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Interaction for Person {
    async fn confirm(&self, request: &ConfirmRequest) -> Option<Answer> {
        self.asked.lock().unwrap().push(request.tool.clone());
        self.answer
    }
    async fn ask(&self, _: &str, _: &[String]) -> Option<String> {
        None
    }
    async fn notify(&self, _: &str) {}
}

struct Fixture {
    agent: Agent,
    script: Arc<Script>,
    log: Arc<Mutex<Vec<String>>>,
}

fn fixture(config: Config, replies: Vec<ChatResponse>) -> Fixture {
    let log = Arc::new(Mutex::new(Vec::new()));
    let store = Store::open_in_memory().unwrap();
    let mut tools = ToolRegistry::new();
    tools.register(probe("look", Category::Read, true, true, &log));
    tools.register(probe("shell", Category::System, false, false, &log));
    tools.register(probe("edit", Category::Write, true, false, &log));
    tools.register(Arc::new(crate::tools::DelegateTask::default()));
    let script = Script::new(replies);
    let agent = Agent::with_tools(&config, script.clone(), store, tools);
    Fixture { agent, script, log }
}

fn config() -> Config {
    let mut c = Config::default();
    c.tools.toolsets = vec!["delegate".into()];
    c
}

impl Fixture {
    async fn turn(&self, person: Option<Arc<Person>>) -> (TurnReport, Vec<String>) {
        let key = SessionKey::direct(Platform::Telegram, "7");
        let session = self.agent.store.session_active(&key).await.unwrap();
        let mut enabled = vec!["look", "shell", "edit"];
        enabled.extend(crate::config::tools_in(
            self.agent.config.toolsets(Platform::Telegram),
        ));
        let mut run = run::Run {
            agent: &self.agent,
            session_id: Some(session.id),
            tools: std::borrow::Cow::Borrowed(&self.agent.tools),
            enabled,
            ctx: ToolContext::for_tests(),
            control: TurnControl::default(),
            perms: Permissions::load(
                &*self.agent.store,
                self.agent.config.level(Platform::Telegram),
                &key,
                session.id,
                Some(&"7".into()),
            )
            .await
            .unwrap(),
            interaction: person.map(|p| p as Arc<dyn Interaction>),
            depth: 0,
            max_iterations: self.agent.config.agent.max_iterations,
            model: "m".into(),
            extra_usage: Usage::default(),
            extra_iterations: 0,
            deltas: None,
            late_sent: Default::default(),
        };
        let messages = vec![ChatMessage::system("s"), ChatMessage::user("go")];
        let report = run.drive(messages).await.unwrap();
        let results = self
            .script
            .seen
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .messages
            .iter()
            .filter(|m| m.role == crate::llm::Role::Tool)
            .map(|m| m.content.clone())
            .collect();
        (report, results)
    }
}

use crate::llm::ChatMessage;

#[tokio::test]
async fn a_system_call_at_auto_is_confirmed_and_runs_when_allowed() {
    let f = fixture(
        config(),
        vec![calls(&[("shell", json!({"tag": "ls"}))]), text("done")],
    );
    let person = Arc::new(Person {
        answer: Some(Answer::Once),
        asked: Mutex::default(),
    });
    let (report, results) = f.turn(Some(person.clone())).await;
    assert!(matches!(report.outcome, TurnOutcome::Answered(ref t) if t == "done"));
    assert_eq!(*person.asked.lock().unwrap(), ["shell"]);
    assert_eq!(results, ["shell ran ls"]);
}

#[tokio::test]
async fn denied_unanswered_and_unaskable_confirmations_do_not_run() {
    for (answer, person, expect) in [
        (Some(Answer::Deny), true, "the user denied"),
        (None, true, "did not confirm this `shell` call in time"),
        (None, false, "nobody can confirm here"),
    ] {
        let f = fixture(
            config(),
            vec![calls(&[("shell", json!({"tag": "rm"}))]), text("ok")],
        );
        let p = person.then(|| {
            Arc::new(Person {
                answer,
                asked: Mutex::default(),
            })
        });
        let (_, results) = f.turn(p).await;
        assert!(results[0].contains(expect), "{results:?}");
        assert!(f.log.lock().unwrap().is_empty(), "the tool must not run");
    }
}

#[tokio::test]
async fn read_calls_run_without_asking_but_dangerous_ones_are_confirmed() {
    let f = fixture(
        config(),
        vec![
            calls(&[
                ("edit", json!({"tag": "a"})),
                ("edit", json!({"tag": "b", "danger": "recursive delete"})),
            ]),
            text("ok"),
        ],
    );
    let person = Arc::new(Person {
        answer: Some(Answer::Deny),
        asked: Mutex::default(),
    });
    let (_, results) = f.turn(Some(person.clone())).await;
    assert_eq!(
        *person.asked.lock().unwrap(),
        ["edit"],
        "only the dangerous call asks"
    );
    assert_eq!(results[0], "edit ran a");
    assert!(results[1].contains("denied"));
}

#[tokio::test]
async fn session_grants_stop_the_asking_and_deny_overrides_win() {
    let f = fixture(
        config(),
        vec![
            calls(&[("shell", json!({"tag": "1"}))]),
            calls(&[("shell", json!({"tag": "2"}))]),
            text("ok"),
        ],
    );
    let person = Arc::new(Person {
        answer: Some(Answer::Session),
        asked: Mutex::default(),
    });
    let (_, results) = f.turn(Some(person.clone())).await;
    assert_eq!(
        person.asked.lock().unwrap().len(),
        1,
        "asked once for the session"
    );
    assert_eq!(results, ["shell ran 1", "shell ran 2"]);

    let mut c = config();
    c.policy
        .tools
        .insert("look".into(), crate::policy::Decision::Deny);
    c.policy.level = Level::FullAccess;
    let f = fixture(c, vec![calls(&[("look", json!({}))]), text("ok")]);
    let (_, results) = f.turn(None).await;
    assert!(results[0].contains("denied by policy"), "{results:?}");
}

#[tokio::test]
async fn parallel_safe_calls_run_together_and_writes_to_one_file_run_in_order() {
    let f = fixture(
        config(),
        vec![
            calls(&[("look", json!({"tag": "a"})), ("look", json!({"tag": "b"}))]),
            text("ok"),
        ],
    );
    let (_, results) = f.turn(None).await;
    assert_eq!(results, ["look ran a together", "look ran b together"]);

    let f = fixture(
        config(),
        vec![
            calls(&[
                ("edit", json!({"tag": "1", "path": "x"})),
                ("edit", json!({"tag": "2", "path": "x"})),
            ]),
            text("ok"),
        ],
    );
    f.turn(None).await;
    assert_eq!(
        *f.log.lock().unwrap(),
        ["start 1", "end 1", "start 2", "end 2"]
    );
}

#[tokio::test]
async fn delegate_task_runs_a_subagent_that_cannot_approve_or_delegate() {
    let f = fixture(
        config(),
        vec![
            calls(&[("delegate_task", json!({"task": "count the files"}))]),
            // The subagent: tries a system call (needs confirmation) and a nested delegation.
            calls(&[
                ("shell", json!({"tag": "x"})),
                ("delegate_task", json!({"task": "deeper"})),
            ]),
            text("there are 3 files"),
            text("The subagent says 3."),
        ],
    );
    let person = Arc::new(Person {
        answer: Some(Answer::Once),
        asked: Mutex::default(),
    });
    let (report, results) = f.turn(Some(person.clone())).await;
    assert!(matches!(report.outcome, TurnOutcome::Answered(ref t) if t == "The subagent says 3."));
    assert_eq!(results, ["Subagent summary:\nthere are 3 files"]);
    assert!(
        person.asked.lock().unwrap().is_empty(),
        "a subagent never asks the user"
    );
    let seen = f.script.seen.lock().unwrap();
    let sub = &seen[1];
    assert_eq!(sub.messages[1].content, "count the files", "fresh context");
    assert!(!sub.tools.iter().any(|t| t.name == "delegate_task"));
    let sub_results: Vec<&str> = seen[2]
        .messages
        .iter()
        .filter(|m| m.role == crate::llm::Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        sub_results[0].contains("nobody can confirm"),
        "{sub_results:?}"
    );
    assert!(sub_results[1].contains("not available"), "{sub_results:?}");
    assert_eq!(report.iterations, 4);
    assert_eq!(report.usage.prompt_tokens, 400);
}

#[tokio::test]
async fn budgets_stop_the_loop() {
    let mut c = config();
    c.agent.max_iterations = 2;
    let looping = || calls(&[("edit", json!({}))]);
    let f = fixture(c, vec![looping(), looping(), looping()]);
    let (report, _) = f.turn(None).await;
    assert!(matches!(report.outcome, TurnOutcome::BudgetExhausted(ref t) if t.contains("2 steps")));

    let mut c = config();
    c.agent.max_turn_tokens = 150;
    let f = fixture(c, vec![looping(), looping(), looping()]);
    let (report, _) = f.turn(None).await;
    assert!(matches!(report.outcome, TurnOutcome::BudgetExhausted(ref t) if t.contains("tokens")));
    assert_eq!(report.iterations, 2);
}
