//! Fuzz target: arbitrary markdown through `to_mrkdwn`. Slack reads `<…>` as a link, a mention
//! or a channel: whatever the model wrote, the output holds no `<!` (an @here, @channel or
//! @everyone ping) and no `<@` (a mention of someone) that the markdown did not ask for.
#![no_main]

use hermes_slack::to_mrkdwn;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|markdown: &str| {
    let out = to_mrkdwn(markdown);
    assert!(!out.contains("<!"), "a ping: {markdown:?} -> {out:?}");
    assert!(!out.contains("<@"), "a mention: {markdown:?} -> {out:?}");
});
