//! The fake Telegram Bot API: the server handle tests drive (`fake`), the Bot API methods and
//! their checks (`api`), and Telegram's formatting parser (`html`).

mod api;
mod fake;
mod html;

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
