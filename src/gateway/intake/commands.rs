//! Chat commands answered by the gateway itself, without the model: `/help` (`/start`), `/new`
//! (`/reset`), `/stop`, `/status`, `/whoami`, `/permissions`, `/sethome`… Anything else starting
//! with `/` goes to the agent. Commands that change things for everyone (`/sethome`, a level
//! above `policy.max_level`, `/permissions` in a shared conversation) are an operator's.

use std::sync::Arc;
use std::time::Duration;

use hermes_adapter::{Message, SessionKey};

use super::stop::stop_session;
use crate::agent::permissions;
use crate::gateway::Shared;
use crate::gateway::adapters::health::ListenerState;
use crate::gateway::cron::run as cron_run;
use crate::gateway::lanes::skills_chat;
use crate::gateway::outbound::replies::replies;
use crate::policy::{Level, OPERATORS_ONLY, Role};

/// Answer a built-in command, or `None` if `name` is not one.
pub(crate) async fn handle(
    shared: &Arc<Shared>,
    msg: &Message,
    key: &SessionKey,
    role: Role,
    name: &str,
    arg: &str,
) -> Option<String> {
    Some(match name {
        "compress" => {
            let person = (msg.platform, msg.sender.id.clone());
            match shared
                .shares
                .model_command(&person, std::time::Instant::now())
            {
                Ok(()) => {
                    compress_later(shared.clone(), msg.clone(), key.clone());
                    "🗜 Compressing this conversation…".to_owned()
                }
                Err(wait) => format!(
                    "⏳ At most {} commands that call the model per minute; try again in {} s.",
                    crate::gateway::lanes::shares::MODEL_COMMANDS_PER_MINUTE,
                    wait.as_secs().max(1)
                ),
            }
        }
        "help" | "start" => HELP.to_owned(),
        "new" | "reset" => {
            let stopped = stop_session(shared, key).await;
            if let Err(e) = shared.store.session_reset(key, "user command").await {
                tracing::error!(error = %e, "cannot reset a session");
                return Some("⚠️ I could not start a new conversation (storage error). Try again in a moment.".into());
            }
            format!(
                "✨ Started a new conversation. I have forgotten the earlier messages of this chat.{}",
                stopped.note()
            )
        }
        "stop" => {
            let stopped = stop_session(shared, key).await;
            if stopped.was_running || stopped.discarded > 0 {
                format!("⏹ Stopped.{}", stopped.note())
            } else {
                "Nothing to stop: I was not working on anything.".to_owned()
            }
        }
        "status" => status(shared, key).await,
        "approve" | "deny" => "Nothing is waiting for your approval.".to_owned(),
        "permissions" => permissions(shared, key, role, arg).await,
        "whoami" => whoami(shared, msg, key, role).await,
        "model" => model(shared, key, arg).await,
        "profile" => super::profile_command::profile(shared, key, role, arg).await,
        "skills" => skills_chat::command(shared, key, arg).await,
        "sethome" if !role.is_operator() => {
            format!("{OPERATORS_ONLY} The home channel is where everyone's scheduled jobs post.")
        }
        "sethome" => {
            let home = cron_run::Home {
                chat: msg.chat.id.clone(),
                thread: msg.thread.clone(),
            };
            match cron_run::set_home(shared, msg.platform, &home).await {
                Ok(()) => format!(
                    "🏠 This chat is now the {} home channel: scheduled jobs delivering to `{}` post here.",
                    msg.platform, msg.platform
                ),
                Err(e) => format!("⚠️ Could not set the home channel: {e}"),
            }
        }
        "usage" => usage(shared, key).await,
        _ => return None,
    })
}

const HELP: &str = "I'm Hermes, your AI assistant. Just write to me.\n\n\
Commands:\n\
/new — start a new conversation (/reset works too)\n\
/stop — stop what I'm doing and drop waiting messages\n\
/status — this conversation, the model, and my health\n\
/whoami — who you are to me: your role and this conversation's level\n\
/compress — summarise the older part of this conversation\n\
/model [name] — show or switch the model of this conversation\n\
/profile [name] — show or switch the agent profile of this chat\n\
/plan <request> — make a plan first; I act on it only when you approve\n\
/skills — the skills I know; /<skill-name> <request> uses one explicitly\n\
/sethome — make this chat the home channel for scheduled jobs (operators)\n\
/usage — tokens and estimated cost of this conversation\n\
/permissions [safe|auto|full-access] — show or set what I may do without asking\n\
/approve, /deny — answer a pending permission request (yes / no work too)\n\
/help — this message";

async fn permissions(shared: &Arc<Shared>, key: &SessionKey, role: Role, arg: &str) -> String {
    let config = shared.config();
    let default = config.level(key.platform);
    if !arg.is_empty() && key.is_shared() && !role.is_operator() {
        return format!(
            "{OPERATORS_ONLY} This conversation is shared: its level applies to everyone in it."
        );
    }
    if !arg.is_empty() {
        let level = match arg.trim().to_lowercase().as_str() {
            "default" | "reset" => None,
            other => match Level::parse(other) {
                Some(l) => Some(l),
                None => {
                    return format!(
                        "Unknown level `{arg}`. Use safe, auto or full-access (or default)."
                    );
                }
            },
        };
        let ceiling = config.policy.max_level;
        if level.is_some_and(|l| l > ceiling) && !role.is_operator() {
            return format!(
                "{OPERATORS_ONLY} Users can set the level up to {ceiling}; only an operator goes above it."
            );
        }
        if let Err(e) = permissions::set_level(&*shared.store, key, level).await {
            tracing::error!(error = %e, "cannot store a permission level");
            return "⚠️ I could not change the level (storage error).".into();
        }
    }
    let level = permissions::stored_level(&*shared.store, key)
        .await
        .ok()
        .flatten()
        .unwrap_or(default);
    let explain = match level {
        Level::Safe => "I ask before every tool call.",
        Level::Auto => {
            "I read and write files on my own; I ask before system commands and anything involving money."
        }
        Level::FullAccess => "I use every tool without asking (dangerous commands included).",
    };
    let changed = if arg.is_empty() {
        ""
    } else {
        "Permission level set. "
    };
    format!(
        "{changed}Level: {level} — {explain}\nChange with /permissions safe | auto | full-access (default: {default})."
    )
}

/// `/whoami`: the sender as the bot knows them, their role and this conversation's level.
async fn whoami(shared: &Arc<Shared>, msg: &Message, key: &SessionKey, role: Role) -> String {
    let config = shared.config();
    let level = permissions::stored_level(&*shared.store, key)
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| config.level(key.platform));
    let can = if role.is_operator() {
        "you run this bot: every level, /sethome, shared skills and the admin commands are yours"
            .to_owned()
    } else {
        format!(
            "you can set this conversation's level up to {}; an operator can do more",
            config.policy.max_level
        )
    };
    let shared_note = if key.is_shared() {
        " This conversation is shared with the others in it."
    } else {
        ""
    };
    format!(
        "You are {} ({}:{}), {role}: {can}. This conversation's level: {level}.{shared_note}",
        msg.sender.display_name, msg.platform, msg.sender.id
    )
}

/// Summarise the session's middle in the background (it takes a model call) and report.
fn compress_later(shared: Arc<Shared>, msg: Message, key: SessionKey) {
    tokio::spawn(async move {
        let text = match shared.store.session_active(&key).await {
            Ok(session) => match shared.agent().compress(session.id).await {
                Ok(Some(done)) => format!(
                    "🗜 Done: {} earlier messages are now a summary; the first and the most recent ones are kept as they were.",
                    done.messages
                ),
                Ok(None) => "Nothing to compress: this conversation is still short (or the summary could not be written; see the log).".to_owned(),
                Err(e) => format!("⚠️ Could not compress: {e}"),
            },
            Err(e) => format!("⚠️ Could not compress: {e}"),
        };
        let rows = replies(
            &shared,
            &msg,
            &text,
            &format!("compress:{}:{}", key, hermes_adapter::now_millis()),
        );
        match shared.store.outbox_enqueue(rows).await {
            Ok(()) => shared.outbox_signal.notify_one(),
            Err(e) => tracing::error!(error = %e, "cannot queue the compression report"),
        }
    });
}

async fn model(shared: &Arc<Shared>, key: &SessionKey, arg: &str) -> String {
    let llm = &shared.config().llm;
    let mut choices = vec![llm.model.clone()];
    choices.extend(llm.models.iter().filter(|m| **m != llm.model).cloned());
    let session = match shared.store.session_active(key).await {
        Ok(s) => s,
        Err(e) => return format!("⚠️ {e}"),
    };
    if !arg.is_empty() {
        let Some(chosen) = choices.iter().find(|m| m.eq_ignore_ascii_case(arg.trim())) else {
            return format!("Unknown model `{arg}`. Available: {}.", choices.join(", "));
        };
        let stored = (chosen != &llm.model).then(|| chosen.clone());
        if let Err(e) = shared.store.set_session_model(session.id, stored).await {
            return format!("⚠️ Could not switch the model: {e}");
        }
        return format!("Model for this conversation: {chosen}.");
    }
    let current = session.model.unwrap_or_else(|| llm.model.clone());
    let others: Vec<&String> = choices.iter().filter(|m| **m != current).collect();
    let mut out = format!(
        "Model: {current} ({}).",
        shared.agent().provider().describe()
    );
    if others.is_empty() {
        out.push_str(" No other models are configured (llm.models).");
    } else {
        out.push_str(&format!(
            " Switch with /model <name>: {}.",
            others
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out
}

async fn usage(shared: &Arc<Shared>, key: &SessionKey) -> String {
    let session = match shared.store.session_active(key).await {
        Ok(s) => s,
        Err(e) => return format!("⚠️ {e}"),
    };
    let stats = shared
        .store
        .session_stats(session.id)
        .await
        .unwrap_or_default();
    let u = stats.usage;
    let model = session
        .model
        .unwrap_or_else(|| shared.config().llm.model.clone());
    let cached_share = (u.cached_tokens * 100)
        .checked_div(u.prompt_tokens)
        .unwrap_or(0);
    let mut out = format!(
        "This conversation: {} turns, {} tokens in ({} from cache, {cached_share}%), {} tokens out.",
        stats.turns, u.prompt_tokens, u.cached_tokens, u.completion_tokens
    );
    match shared.config().llm.prices.get(&model) {
        Some(p) => {
            let fresh = u.prompt_tokens.saturating_sub(u.cached_tokens) as f64;
            let fresh = fresh - u.cache_write_tokens as f64;
            let cost = (fresh.max(0.0) * p.input
                + u.cached_tokens as f64 * p.cache_read.unwrap_or(p.input)
                + u.cache_write_tokens as f64 * p.cache_write.unwrap_or(p.input)
                + u.completion_tokens as f64 * p.output)
                / 1_000_000.0;
            out.push_str(&format!(" Estimated cost: ${cost:.4} ({model})."));
        }
        None => out.push_str(&format!(
            " No price is configured for {model} (llm.prices)."
        )),
    }
    out
}

async fn status(shared: &Arc<Shared>, key: &SessionKey) -> String {
    let mut out = format!("Session: {key}\n");
    match shared.store.session_active(key).await {
        Ok(session) => {
            let stats = shared
                .store
                .session_stats(session.id)
                .await
                .unwrap_or_default();
            let since = jiff::Timestamp::from_millisecond(session.created_at)
                .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
                .unwrap_or_default();
            out.push_str(&format!(
                "Started {since}; {} messages, {} turns, {} tokens in / {} out\n",
                stats.messages,
                stats.turns,
                stats.usage.prompt_tokens,
                stats.usage.completion_tokens
            ));
            let agent = shared.agent();
            let model = session.model.as_deref().unwrap_or(agent.model());
            out.push_str(&format!(
                "Model: {model} ({})\n",
                agent.provider().describe()
            ));
        }
        Err(e) => out.push_str(&format!("(session unavailable: {e})\n")),
    }
    let busy = match shared.pool.get(key) {
        Some(lane) => lane.state.lock().await.control.is_some(),
        None => false,
    };
    let waiting = shared
        .store
        .inbox_queued_for(key, 1000)
        .await
        .map(|r| r.len())
        .unwrap_or(0);
    out.push_str(&format!(
        "Now: {}{}\n",
        if busy { "working on an answer" } else { "idle" },
        match waiting {
            0 => String::new(),
            n => format!(", {n} message(s) waiting"),
        }
    ));
    for (listener, h) in shared.health.snapshot() {
        let state = match h.state {
            ListenerState::Up => "up",
            ListenerState::Starting => "connecting",
            ListenerState::Restarting => "reconnecting",
            ListenerState::Stopped => "stopped",
            ListenerState::Standby => "standby (another process receives)",
        };
        let beat = h
            .last_heartbeat
            .map(|t| format!(", last heard {} ago", short(t.elapsed())))
            .unwrap_or_default();
        out.push_str(&format!(
            "{listener}: {state}{beat}, {} restarts\n",
            h.restarts
        ));
    }
    for s in shared.mcp.status() {
        out.push_str(&format!("MCP {}: {}\n", s.name, s.state.describe()));
    }
    out.push_str(&format!(
        "Gateway: up {}, {} turns running, {} active sessions · hermes {}",
        short(shared.started.elapsed()),
        shared.pool.running_turns(),
        shared.pool.active_lanes(),
        env!("CARGO_PKG_VERSION")
    ));
    out
}

fn short(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86400, (s % 86400) / 3600),
    }
}
