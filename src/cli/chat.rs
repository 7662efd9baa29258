//! `hermes chat`: a conversation in the terminal with the same agent, tools and store.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{ChatKind, Platform, SessionKey};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::Mutex;

use crate::agent::{
    Agent, ConfirmRequest, Interaction, NewMessage, Setting, TurnControl, TurnInput, TurnOutcome,
};
use crate::config::Config;
use crate::llm::ChatMessage;
use crate::policy::Answer;
use crate::store::{InboxOutcome, Store, TurnCommit, TurnRecord};

pub(super) async fn chat(config: Config) -> ExitCode {
    let provider = match super::provider(&config) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let store = match super::open_store(&config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    let user = std::env::var("USER").unwrap_or_else(|_| "local".into());
    let key = SessionKey::direct(Platform::Cli, user);
    let agent = match Agent::new(&config, provider, store.clone()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "hermes chat · {} · session {key}\n/new starts over, /exit (or Ctrl-D) leaves, Ctrl-C stops an answer.",
        agent.model()
    );
    let lines: Terminal = Arc::new(Mutex::new(BufReader::new(tokio::io::stdin()).lines()));
    loop {
        print!("> ");
        let _ = std::io::stdout().flush();
        let next = lines.lock().await.next_line().await;
        let line = match next {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                eprintln!("hermes: cannot read the terminal: {e}");
                return ExitCode::FAILURE;
            }
        };
        let text = line.trim();
        match text {
            "" => continue,
            "/exit" | "/quit" => break,
            "/new" | "/reset" => match store.session_reset(&key, "user command").await {
                Ok(_) => println!("✨ Started a new conversation."),
                Err(e) => eprintln!("hermes: {e}"),
            },
            _ => {
                if let Err(e) = turn(&agent, &store, &key, text, &lines).await {
                    eprintln!("hermes: {e}");
                }
            }
        }
    }
    println!();
    ExitCode::SUCCESS
}

async fn turn(
    agent: &Agent,
    store: &Store,
    key: &SessionKey,
    text: &str,
    lines: &Terminal,
) -> Result<(), crate::store::StoreError> {
    let session = store.session_active(key).await?;
    let control = TurnControl::default();
    let stop = control.stop.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.cancel();
        }
    });
    let started_at = hermes_adapter::now_millis();
    let report = agent
        .run_turn(TurnInput {
            session: &session,
            setting: Setting {
                platform: Platform::Cli,
                chat: ChatKind::Direct,
            },
            new_messages: vec![NewMessage {
                inbox_id: None,
                text: text.to_owned(),
                images: Vec::new(),
            }],
            requester: None,
            // The terminal is its operator's.
            role: crate::policy::Role::Operator,
            interaction: Some(Arc::new(TerminalPerson {
                lines: lines.clone(),
                wait: Duration::from_secs(agent.config().policy.approval_timeout_secs.max(60)),
            })),
            control,
            deltas: None,
            chat: None,
            late_notice: Default::default(),
            plan: false,
        })
        .await;
    ctrl_c.abort();
    let report = report?;
    let (messages, outcome) = match report.outcome {
        TurnOutcome::Answered(answer) | TurnOutcome::BudgetExhausted(answer) => {
            println!("\n{answer}\n");
            (vec![ChatMessage::assistant(answer)], InboxOutcome::Replied)
        }
        TurnOutcome::Cancelled => {
            println!("\n⏹ Stopped.\n");
            (vec![], InboxOutcome::Stopped)
        }
        TurnOutcome::Failed(e) => {
            println!("\n⚠️ {e}\n");
            (vec![], InboxOutcome::Failed)
        }
    };
    store
        .commit_turn(TurnCommit {
            session_id: session.id,
            messages,
            replies: vec![],
            inbox_ids: vec![],
            record: TurnRecord {
                started_at,
                iterations: report.iterations,
                usage: report.usage,
                model: agent.model().to_owned(),
                outcome,
            },
        })
        .await
}

type Terminal = Arc<Mutex<Lines<BufReader<Stdin>>>>;

/// The person at the terminal, asked on stdout and answering on stdin.
struct TerminalPerson {
    lines: Terminal,
    wait: Duration,
}

impl TerminalPerson {
    async fn read(&self, prompt: &str) -> Option<String> {
        print!("{prompt}");
        let _ = std::io::stdout().flush();
        let mut lines = self.lines.lock().await;
        match tokio::time::timeout(self.wait, lines.next_line()).await {
            Ok(Ok(Some(line))) => Some(line.trim().to_owned()),
            _ => None,
        }
    }
}

#[async_trait]
impl Interaction for TerminalPerson {
    async fn confirm(&self, request: &ConfirmRequest) -> Option<Answer> {
        println!(
            "\n🔐 {} wants to run ({}):\n{}",
            request.tool, request.reason, request.arguments
        );
        let reply = self
            .read("Allow? [y]es once, [s]ession, [a]lways, [n]o: ")
            .await?;
        Some(match reply.to_lowercase().as_str() {
            "y" | "yes" => Answer::Once,
            "s" | "session" => Answer::Session,
            "a" | "always" => Answer::Always,
            _ => Answer::Deny,
        })
    }

    async fn ask(&self, question: &str, choices: &[String]) -> Option<String> {
        let hint = if choices.is_empty() {
            String::new()
        } else {
            format!(" ({})", choices.join(" / "))
        };
        self.read(&format!("\n❓ {question}{hint}\n? ")).await
    }

    async fn notify(&self, text: &str) {
        println!("{text}");
    }

    /// The user sits at this machine: the file is shown by its path.
    async fn send_file(&self, path: &std::path::Path, caption: &str) -> Result<String, String> {
        println!("\n📎 {} {caption}", path.display());
        Ok(format!(
            "shown to the user at the terminal as {}",
            path.display()
        ))
    }
}
