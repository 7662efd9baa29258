//! Exists for the fuzz targets in `fuzz/`: a Socket Mode envelope through the listener's
//! parsing and conversion steps. Not an API.

use hermes_adapter::Message;
use slack_morphism::prelude::*;

use crate::inbound::{self, Rules};
use crate::web::BotIdentity;
use crate::{SlackMode, SlackSettings};

fn rules() -> Rules {
    Rules::new(&SlackSettings {
        bot_token: "xoxb-fuzz".into(),
        mode: SlackMode::Socket {
            app_token: "xapp-fuzz".into(),
        },
        api_url: "http://127.0.0.1:9/api".into(),
        allowed_channels: Vec::new(),
        allowed_teams: Vec::new(),
        reply_in_thread: true,
        socket_idle: std::time::Duration::from_secs(30),
    })
}

/// The message the listener would store for Socket Mode frame `text` (an `events_api`,
/// `interactive` or `slash_commands` envelope), or `None`.
pub fn envelope(text: &str) -> Option<Message> {
    let me = BotIdentity {
        user_id: "UBOT".into(),
        bot_id: Some("BBOT".into()),
        team_id: "T0TEAM".into(),
        name: "hermes".into(),
    };
    let rules = rules();
    let frame: serde_json::Value = serde_json::from_str(text).ok()?;
    let payload = frame.get("payload")?.clone();
    match frame.get("type")?.as_str()? {
        "events_api" => {
            let cb: SlackPushEventCallback = serde_json::from_value(payload).ok()?;
            inbound::event_message(&cb, &me, &rules)
        }
        "interactive" => {
            let ev: SlackInteractionEvent = serde_json::from_value(payload).ok()?;
            inbound::action_message(&ev, &rules)
        }
        "slash_commands" => {
            let ev: SlackCommandEvent = serde_json::from_value(payload).ok()?;
            inbound::command_message(&ev, &rules)
        }
        _ => None,
    }
}
