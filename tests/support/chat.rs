//! What tests read off the bot's chat messages, whatever the platform: the buttons under a
//! message, and lines that must arrive whole and in order across the chunks of a long answer.

use std::fmt::Debug;

/// A message that can carry buttons (a Telegram inline keyboard, Discord components, Slack
/// actions blocks).
pub trait Buttons: Debug {
    /// `(label, value)` of every button under the message: the value is what a press sends
    /// back (Telegram callback data, a Discord `custom_id`, a Slack action value).
    fn buttons(&self) -> Vec<(String, String)>;

    /// The value of the first button whose label contains `label`; panics if there is none.
    fn button(&self, label: &str) -> String {
        self.buttons()
            .into_iter()
            .find(|(l, _)| l.contains(label))
            .unwrap_or_else(|| panic!("no `{label}` button in {self:?}"))
            .1
    }
}

/// Every line of `lines` (trimmed) appears whole in `text`, in the given order.
pub fn assert_in_order(text: &str, lines: &[String]) {
    let mut from = 0;
    for line in lines {
        let at = text[from..]
            .find(line.trim())
            .unwrap_or_else(|| panic!("missing code line {line}"));
        from += at + line.trim().len();
    }
}
