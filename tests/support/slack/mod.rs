//! The fake Slack and the Slack world: the Socket Mode websocket, the server handle and the
//! Events API client tests drive (`fake`), the Web API (`api`), and a daemon running with Slack
//! alone (`world`).

mod api;
mod fake;
mod world;

// Each test binary uses only some of these.
#[allow(unused_imports)]
pub use api::{APP_TOKEN, BOT_TOKEN, BOT_USER, Call, Fault, Posted, SharedFile, TEAM};
#[allow(unused_imports)]
pub use fake::{
    ALICE, BOB, CHANNEL, EventsClient, FakeSlack, MALLORY, SIGNING_SECRET, Sent, dm_channel,
    now_unix, sign,
};
#[allow(unused_imports)]
pub use world::{Mode, SlackWorld};
