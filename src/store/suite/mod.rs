//! The store's behaviour, written once and run against every backend: each case is an async
//! function taking a fresh [`Store`]; a backend runs them all with
//! `crate::store::suite::store_suite!(<expression opening an empty store>)` (the SQLite backend
//! does so in `sqlite/tests.rs`). A PostgreSQL backend plugs in the same way.

pub(crate) mod flow;
pub(crate) mod retention;
pub(crate) mod search;
pub(crate) mod settings;

use hermes_adapter::{Chat, ChatKind, Message, Outbound, Platform, Sender, SessionKey, Trigger};

use crate::conversation::ChatMessage;
use crate::store::{FoundMessage, SearchScope, Store};

/// One `#[tokio::test]` per case of the suite, each on a store that `$open` makes.
macro_rules! store_suite {
    ($open:expr) => {
        $crate::store::suite::store_suite!(@cases $open;
            flow::inbox_deduplicates_redelivery,
            flow::inbox_flows_from_new_to_queued_to_done,
            flow::outbox_sends_one_chat_in_order_and_chats_independently,
            flow::history_round_trips_tool_calls_and_inbox_messages_are_idempotent,
            flow::recent_chats_name_the_last_message_of_each_chat_and_thread,
            search::a_phrase_from_an_earlier_session_is_found_with_its_context,
            search::near_hits_share_an_excerpt_and_distant_ones_do_not,
            search::sessions_come_newest_first_with_bounded_hits,
            search::sessions_are_ordered_by_start_not_by_latest_match,
            search::cjk_phrases_and_two_character_terms_are_found,
            search::all_terms_first_then_any_term,
            search::fts_operators_typed_by_a_user_never_error,
            search::tool_results_are_not_searched,
            search::another_owners_sessions_are_never_returned,
            search::read_on_continues_after_the_given_message,
            search::sessions_are_listed_and_exported,
            search::a_session_knows_the_chat_it_is_held_in,
            search::an_imported_session_keeps_its_times_and_is_stored_once,
            settings::settings_are_set_replaced_and_deleted,
            settings::counters_start_at_one_and_count_up,
            settings::a_scope_lists_its_settings_by_name,
            retention::old_finished_rows_go_the_newest_and_open_ones_stay,
        );
    };
    (@cases $open:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                $crate::store::suite::$module::$case($open).await;
            }
        )*
    };
}
pub(crate) use store_suite;

pub(crate) fn message(chat: &str, id: &str, text: &str) -> Message {
    Message {
        platform: Platform::Telegram,
        id: id.into(),
        chat: Chat {
            id: chat.into(),
            kind: ChatKind::Direct,
            title: None,
        },
        thread: None,
        sender: Sender {
            id: chat.into(),
            display_name: "Ann".into(),
            handle: None,
            is_bot: false,
        },
        text: text.into(),
        attachments: vec![],
        reply_to: None,
        sent_at: 0,
        subject: None,
        topic: None,
        trigger: Trigger::Direct,
    }
}

pub(crate) fn reply(chat: &str, key: &str) -> (Platform, Outbound) {
    (
        Platform::Telegram,
        Outbound::text(chat.into(), format!("re {key}"), key),
    )
}

pub(crate) fn dm(user: &str) -> SessionKey {
    SessionKey::direct(Platform::Telegram, user)
}

pub(crate) fn group(chat: &str, user: Option<&str>) -> SessionKey {
    let text = match user {
        Some(u) => format!("telegram:{chat}:{u}"),
        None => format!("telegram:{chat}:*"),
    };
    text.parse().unwrap()
}

/// A new session of `key` holding `texts`, alternately from the user and the assistant.
pub(crate) async fn session_with(store: &Store, key: &SessionKey, texts: &[&str]) -> i64 {
    let s = store.session_reset(key, "test").await.unwrap();
    let msgs = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if i % 2 == 0 {
                ChatMessage::user(*t)
            } else {
                ChatMessage::assistant(*t)
            }
        })
        .collect();
    store.append_messages(s.id, msgs).await.unwrap();
    s.id
}

pub(crate) fn owner(key: &SessionKey) -> SearchScope {
    SearchScope::Owner(key.owner())
}

pub(crate) fn contents(excerpt: &[FoundMessage]) -> Vec<&str> {
    excerpt.iter().map(|m| m.content.as_str()).collect()
}

/// A session of `user` (created if none is active) holding `texts`, user and assistant in turn.
pub(crate) async fn session_of(store: &Store, user: &str, texts: &[&str]) -> i64 {
    let s = store
        .session_active(&SessionKey::direct(Platform::Telegram, user))
        .await
        .unwrap();
    let msgs = texts
        .iter()
        .enumerate()
        .map(|(i, t)| match i % 2 {
            0 => ChatMessage::user(*t),
            _ => ChatMessage::assistant(*t),
        })
        .collect();
    store.append_messages(s.id, msgs).await.unwrap();
    s.id
}

/// Every case the suite's files define is in the `store_suite!` list (a case left out would
/// never run).
#[test]
fn every_case_is_listed() {
    let listed = include_str!("mod.rs");
    for (module, text) in [
        ("flow", include_str!("flow.rs")),
        ("retention", include_str!("retention.rs")),
        ("search", include_str!("search.rs")),
        ("settings", include_str!("settings.rs")),
    ] {
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("pub(crate) async fn ") {
                let name = rest.split('(').next().unwrap_or_default();
                assert!(
                    listed.contains(&format!("{module}::{name},")),
                    "{module}::{name} is not in the store_suite! list"
                );
            }
        }
    }
}
