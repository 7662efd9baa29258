//! The fake Discord and the Discord world: the gateway websocket and the server handle tests
//! drive (`fake`), the REST API and Discord's JSON objects (`api`), and a daemon running with
//! Discord alone (`world`).

mod api;
mod fake;
mod world;

// Each test binary uses only some of these.
#[allow(unused_imports)]
pub use api::{
    APPLICATION_ID, BOT_ID, BOT_NAME, BOT_ROLE, CHANNEL, GUILD, bot_user, member, message,
    text_channel, thread_channel, user,
};
#[allow(unused_imports)]
pub use fake::{Call, FakeDiscord, Fault, SentMessage};
#[allow(unused_imports)]
pub use world::{ALICE, BOB, MALLORY, start, texts, wait_sent, wait_shown, wait_until, world};
