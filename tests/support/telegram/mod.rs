//! The fake Telegram Bot API: the server handle tests drive (`fake`), the Bot API methods and
//! their checks (`api`), Telegram's formatting parser (`html`), and webhook registration and
//! delivery (`webhook`).

mod api;
mod fake;
mod html;
mod webhook;

// Each test binary uses only some of these.
#[allow(unused_imports)]
pub use api::INVALID_UTF8;
#[allow(unused_imports)]
pub use fake::{
    BOT_ID, BOT_USERNAME, Call, CallbackAnswer, ChatAction, FakeTelegram, Fault, Inbound, SentFile,
    SentMessage, visible,
};
#[allow(unused_imports)]
pub use html::{utf16_len, visible_text};
#[allow(unused_imports)]
pub use webhook::{SECRET_HEADER, Webhook, WebhookPost};
