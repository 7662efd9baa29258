//! Events between two sync tokens, fetched with `/messages`: the part a limited sync left out
//! (back from its `prev_batch` to the previous sync), and the part the SDK took in but the last
//! run did not handle (forward from hermes' token to the SDK's: the SDK keeps its own token and
//! answers the same sync again with nothing). Oldest first, bounded per room.

use matrix_sdk::Room;
use matrix_sdk::deserialized_responses::TimelineEvent;
use matrix_sdk::room::MessagesOptions;
use matrix_sdk::ruma::UInt;

/// Most events fetched for one room.
const MAX_EVENTS: usize = 2_000;

/// The events from `prev_batch` back to `since`, oldest first.
pub(crate) async fn backward(room: &Room, prev_batch: &str, since: &str) -> Vec<TimelineEvent> {
    let mut out = pages(room, MessagesOptions::backward, prev_batch, since).await;
    out.reverse();
    out
}

/// The events from `from` forward to `to`, oldest first.
pub(crate) async fn forward(room: &Room, from: &str, to: &str) -> Vec<TimelineEvent> {
    pages(room, MessagesOptions::forward, from, to).await
}

async fn pages(
    room: &Room,
    direction: fn() -> MessagesOptions,
    from: &str,
    to: &str,
) -> Vec<TimelineEvent> {
    let mut out = Vec::new();
    let mut from = from.to_owned();
    while out.len() < MAX_EVENTS {
        let mut options = direction().from(Some(from.as_str()));
        options.to = Some(to.to_owned());
        options.limit = UInt::from(100u32);
        let page = match room.messages(options).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(room = %room.room_id(), error = %e, "matrix: cannot fetch events between two syncs");
                break;
            }
        };
        let got = page.chunk.len();
        out.extend(page.chunk);
        match page.end {
            Some(end) if got > 0 && end != from => from = end,
            _ => break,
        }
    }
    out
}
