//! `hermes chat`: a conversation in the terminal with the same agent, tools and store.

use std::io::Write;
use std::process::ExitCode;

use hermes_adapter::{ChatKind, Platform, SessionKey};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::agent::{Agent, Setting, TurnControl, TurnInput, TurnOutcome};
use crate::config::Config;
use crate::llm::ChatMessage;
use crate::store::{InboxOutcome, Store, TurnCommit, TurnRecord};

pub(super) async fn chat(config: Config) -> ExitCode {
    let provider = match super::provider(&config) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let store = match Store::open(&config.database_path()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    let user = std::env::var("USER").unwrap_or_else(|_| "local".into());
    let key = SessionKey::direct(Platform::Cli, user);
    let agent = Agent::new(&config, provider, store.clone());
    println!(
        "hermes chat · {} · session {key}\n/new starts over, /exit (or Ctrl-D) leaves, Ctrl-C stops an answer.",
        agent.model()
    );
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        print!("> ");
        let _ = std::io::stdout().flush();
        let line = match lines.next_line().await {
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
                if let Err(e) = turn(&agent, &store, &key, text).await {
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
            new_messages: vec![(None, text.to_owned())],
            control,
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
