//! Prompt size: a standard three-turn conversation from one user, answered by the echo LLM;
//! the fake LLM records every request, whose compact JSON body is what the system sent. Tokens
//! are estimated as bytes / 4 (no tokenizer is available offline; the ratio between systems
//! does not depend on it).

use std::time::{Duration, Instant};

use crate::sut::{self, Target};

pub const TURNS: [&str; 3] = [
    "Hi! Who are you?",
    "What can you do for me today?",
    "Thanks, that's all for now.",
];

/// Figures of one turn.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    /// Model calls made while the turn ran (including any auxiliary ones).
    pub calls: usize,
    /// Bytes of the request that carried the user's message (the agent's main call).
    pub main_bytes: usize,
    /// Bytes of every request of the turn.
    pub all_bytes: usize,
    pub tools: usize,
    pub system_bytes: usize,
    pub messages: usize,
}

impl Turn {
    pub fn est_tokens(&self) -> usize {
        self.main_bytes / 4
    }
}

#[derive(Debug, Clone, Default)]
pub struct Conversation {
    pub turns: Vec<Turn>,
}

pub async fn conversation(target: Target, opts: &crate::Options) -> Result<Conversation, String> {
    let mut w = sut::world(Duration::ZERO).await;
    let running = sut::start(target, &mut w, opts).await;
    let user = 4242;
    let mut turns = Vec::new();
    for (i, text) in TURNS.iter().enumerate() {
        let before = w.llm.requests().len();
        w.tg.private_text(user, "User", text);
        let deadline = Instant::now() + Duration::from_secs(60);
        // The answer echoes the text; other messages (a welcome, notices) do not count.
        let echo = format!("echo: {text}");
        while !w
            .tg
            .sent_to(user)
            .iter()
            .any(|m| m.visible_text.contains(&echo))
        {
            if Instant::now() > deadline {
                return Err(format!("{} did not answer turn {}", target.label(), i + 1));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Let auxiliary calls made right after the answer (titles, reviews) arrive.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let reqs = w.llm.requests()[before..].to_vec();
        let size = |r: &crate::support::llm::RecordedRequest| {
            serde_json::to_string(&r.body).map(|s| s.len()).unwrap_or(0)
        };
        let main = reqs
            .iter()
            .find(|r| r.last_user_text().is_some_and(|t| t.contains(text)));
        turns.push(Turn {
            calls: reqs.len(),
            main_bytes: main.map(size).unwrap_or(0),
            all_bytes: reqs.iter().map(size).sum(),
            tools: main.map(|r| r.tools().len()).unwrap_or(0),
            system_bytes: main
                .and_then(|r| r.system_text())
                .map(|s| s.len())
                .unwrap_or(0),
            messages: main.map(|r| r.messages().len()).unwrap_or(0),
        });
    }
    drop(running);
    Ok(Conversation { turns })
}
