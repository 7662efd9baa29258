//! Exists for the fuzz targets in `fuzz/`: a room event through the listener's conversion, in a
//! direct chat and in a group, and markdown through the HTML renderer. Not an API.

use hermes_adapter::Message;
use ruma::events::room::message::OriginalSyncRoomMessageEvent;
use ruma::user_id;

use crate::inbound::{self, RoomContext};

/// The messages the listener would store for room event `json` (a `m.room.message`), as if it
/// came in a direct chat and in a group where the bot is named "hermes".
pub fn event(json: &str) -> Vec<Message> {
    let Ok(ev) = serde_json::from_str::<OriginalSyncRoomMessageEvent>(json) else {
        return Vec::new();
    };
    let me = user_id!("@bot:localhost");
    [true, false]
        .into_iter()
        .filter_map(|direct| {
            let room = RoomContext {
                room_id: "!room:localhost",
                direct,
                title: Some("room".into()),
                me,
                my_name: Some("hermes"),
                sender_name: Some("someone".into()),
            };
            inbound::convert(&ev, &room, !direct)
        })
        .collect()
}

/// Markdown rendered as the two bodies of a message: `(plain, html)`.
pub fn render(markdown: &str) -> (String, String) {
    crate::format::render(markdown)
}
