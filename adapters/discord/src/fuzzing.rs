//! Exists for the fuzz targets in `fuzz/`: a gateway frame through the listener's parsing and
//! conversion steps, in every kind of place a message can be posted. Not an API.

use hermes_adapter::Message;
use serenity::all::{Interaction, Message as DiscordMessage};

use crate::channels::Place;
use crate::{DiscordSettings, inbound};

/// The bot's id in [`frame`].
pub const BOT: u64 = 900_000_000_000_000_001;

fn settings() -> DiscordSettings {
    DiscordSettings {
        token: "fuzz".into(),
        api_url: crate::DEFAULT_API_URL.parse().expect("the default URL"),
        gateway_url: None,
        allowed_guilds: Vec::new(),
        allowed_roles: Vec::new(),
        free_response_channels: vec![7],
        require_mention: true,
        auto_thread: true,
        message_content: true,
        shards: 1,
    }
}

/// Every message the listener would store for gateway frame `text`: a MESSAGE_CREATE
/// converted as if posted in a DM, a channel and a thread, an INTERACTION_CREATE's button.
pub fn frame(text: &str) -> Vec<Message> {
    let Some(payload) = crate::gateway::parse_payload(text) else {
        return Vec::new();
    };
    let s = settings();
    let mut out = Vec::new();
    match payload {
        ("MESSAGE_CREATE", data) => {
            if let Ok(m) = serde_json::from_str::<DiscordMessage>(data) {
                for place in [
                    Place::Direct,
                    Place::Channel,
                    Place::Thread {
                        parent: 7,
                        owner: Some(BOT),
                    },
                ] {
                    out.extend(inbound::message(&m, BOT, place, &[5], &s));
                }
            }
        }
        ("INTERACTION_CREATE", data) => {
            if let Ok(Interaction::Component(press)) = serde_json::from_str::<Interaction>(data) {
                out.extend(inbound::button(&press, Place::Channel, &s));
            }
        }
        _ => {}
    }
    out
}
