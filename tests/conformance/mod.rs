//! One conformance suite for every platform: the same cases, written once (`cases.rs`) against
//! one trait (`world.rs`), run through the real binary against each platform's world: the fakes
//! of Telegram, Discord and Slack (Socket Mode and the Events API), a real Dovecot for email and
//! a real Synapse for Matrix.
//!
//! The list below is the suite: every case for every platform, one test each, named
//! `<platform>::<case>`. A case a platform cannot have (email has no group mention; a real
//! server cannot be told to answer 429) prints "n/a" with the reason instead of passing
//! silently. The storm prints one `STORM platform=… lost=… doubled=…` line per platform.
//!
//! Needs the mail servers and Synapse (`.ci/test` starts them).

mod cases;
mod world;
mod worlds;

/// One `#[tokio::test]` per platform and case: `mod <platform> { fn <case>() }`.
macro_rules! suite {
    (platforms: $($platform:ident => $world:ty),* $(,)?; cases: $cases:tt) => {
        $( suite!(@platform $platform, $world, $cases); )*
    };
    (@platform $platform:ident, $world:ty, [$($case:ident),* $(,)?]) => {
        mod $platform {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    crate::conformance::cases::$case::<$world>().await;
                }
            )*
        }
    };
}

suite! {
    platforms:
        telegram => crate::conformance::worlds::telegram::Telegram,
        discord => crate::conformance::worlds::discord::Discord,
        slack_socket => crate::conformance::worlds::slack::SlackSocket,
        slack_events => crate::conformance::worlds::slack::SlackEvents,
        email => crate::conformance::worlds::email::Email,
        matrix => crate::conformance::worlds::matrix::Matrix,
    ;
    cases: [
        direct_message_is_answered,
        a_stranger_costs_no_model_call,
        a_group_message_is_answered_only_when_addressed,
        messages_are_answered_in_order,
        a_long_answer_is_split_at_the_platform_limit,
        a_rate_limited_send_is_waited_out_and_sent_once,
        a_formatting_rejection_falls_back_to_plain_text,
        a_provider_outage_is_explained_and_later_messages_answered,
        killed_mid_turn_the_message_is_answered_once_after_restart,
        killed_after_sending_nothing_is_sent_again,
        a_restart_answers_nothing_again,
        a_deaf_connection_is_replaced_and_nothing_is_lost,
        a_storm_with_three_sigkills_loses_nothing,
    ]
}
