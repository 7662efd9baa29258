//! History search: phrases with context, excerpts, ordering, CJK, operators typed by users,
//! tool output left out, owners kept apart, reading on; and the operator's listing.

use hermes_adapter::{Platform, SessionKey};

use super::{contents, dm, group, message, owner, session_of, session_with};
use crate::conversation::{ChatMessage, Role, ToolCall};
use crate::store::*;

pub(crate) async fn a_phrase_from_an_earlier_session_is_found_with_its_context(store: Store) {
    let key = dm("1");
    let texts: Vec<String> = (0..20).map(|i| format!("message number {i}")).collect();
    let mut texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    texts[10] = "we chose the blue zeppelin for the logo";
    let old = session_with(&store, &key, &texts).await;
    // Tool rounds in the middle are neither context nor counted as such.
    let call = ToolCall {
        id: "c".into(),
        name: "read_file".into(),
        arguments: "{}".into(),
    };
    let mut asked = ChatMessage::assistant("");
    asked.tool_calls = vec![call.clone()];
    store
        .append_messages(
            old,
            vec![asked, ChatMessage::tool_result(&call, "zeppelin.txt")],
        )
        .await
        .unwrap();
    session_with(&store, &key, &["something else entirely"]).await;

    let found = store
        .search_messages("blue zeppelin", owner(&key), 5, 5)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].session.id, old);
    assert_eq!(found[0].session.key, key);
    let [excerpt] = &found[0].excerpts[..] else {
        panic!("one excerpt: {found:?}")
    };
    assert_eq!(excerpt.len(), 11);
    assert_eq!(excerpt[0].content, "message number 5");
    assert_eq!(excerpt[10].content, "message number 15");
    let hits: Vec<&FoundMessage> = excerpt.iter().filter(|m| m.hit).collect();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].content, "we chose the blue zeppelin for the logo");
    assert_eq!(hits[0].role, Role::User);

    // Fewer messages of context, and none at all.
    let found = store
        .search_messages("zeppelin", owner(&key), 5, 1)
        .await
        .unwrap();
    assert_eq!(
        contents(&found[0].excerpts[0]),
        [
            "message number 9",
            "we chose the blue zeppelin for the logo",
            "message number 11"
        ]
    );
    let found = store
        .search_messages("zeppelin", owner(&key), 5, 0)
        .await
        .unwrap();
    assert_eq!(found[0].excerpts[0].len(), 1);
}

pub(crate) async fn near_hits_share_an_excerpt_and_distant_ones_do_not(store: Store) {
    let key = dm("1");
    let texts: Vec<String> = (0..40)
        .map(|i| match i {
            3 | 6 | 30 => format!("walrus {i}"),
            _ => format!("filler {i}"),
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    session_with(&store, &key, &texts).await;
    let found = store
        .search_messages("walrus", owner(&key), 5, 2)
        .await
        .unwrap();
    let excerpts = &found[0].excerpts;
    assert_eq!(excerpts.len(), 2, "{excerpts:?}");
    assert_eq!(
        contents(&excerpts[0]),
        [
            "filler 1", "filler 2", "walrus 3", "filler 4", "filler 5", "walrus 6", "filler 7",
            "filler 8"
        ]
    );
    assert_eq!(
        contents(&excerpts[1]),
        [
            "filler 28",
            "filler 29",
            "walrus 30",
            "filler 31",
            "filler 32"
        ]
    );
    // Windows that touch without overlapping (hits 3 and 6 with one message of context) merge.
    let texts: Vec<String> = (0..12)
        .map(|i| match i {
            3 | 6 => format!("narwhal {i}"),
            _ => format!("filler {i}"),
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    session_with(&store, &key, &texts).await;
    let found = store
        .search_messages("narwhal", owner(&key), 5, 1)
        .await
        .unwrap();
    assert_eq!(found[0].excerpts.len(), 1, "{:?}", found[0].excerpts);
    assert_eq!(found[0].excerpts[0].len(), 6);
}

pub(crate) async fn sessions_come_newest_first_with_bounded_hits(store: Store) {
    let key = dm("1");
    let mut ids = Vec::new();
    for i in 0..4 {
        let texts: Vec<String> = (0..10).map(|j| format!("otter {i} {j}")).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        ids.push(session_with(&store, &key, &texts).await);
    }
    let found = store
        .search_messages("otter", owner(&key), 3, 0)
        .await
        .unwrap();
    let sessions: Vec<i64> = found.iter().map(|h| h.session.id).collect();
    assert_eq!(sessions, [ids[3], ids[2], ids[1]]);
    for s in &found {
        let hits = s.excerpts.iter().flatten().filter(|m| m.hit).count();
        assert_eq!(hits, HITS_PER_SESSION);
    }
}

pub(crate) async fn sessions_are_ordered_by_start_not_by_latest_match(store: Store) {
    let older = session_with(&store, &dm("1"), &["heron at dawn"]).await;
    let newer = session_with(&store, &dm("1"), &["heron at noon"]).await;
    // The older session is talked in again: its match is now the most recent one.
    store
        .append_messages(older, vec![ChatMessage::user("heron at dusk")])
        .await
        .unwrap();
    let found = store
        .search_messages("heron", owner(&dm("1")), 5, 0)
        .await
        .unwrap();
    let sessions: Vec<i64> = found.iter().map(|h| h.session.id).collect();
    assert_eq!(sessions, [newer, older]);
}

pub(crate) async fn cjk_phrases_and_two_character_terms_are_found(store: Store) {
    let key = dm("1");
    session_with(
        &store,
        &key,
        &[
            "我今天早上对他说你好世界然后去吃饭了",
            "好的，我记住了",
            "東京の天気はどうですか",
            "오늘 날씨가 좋네요",
        ],
    )
    .await;
    let hit = |found: &[SessionHits]| -> Vec<String> {
        found
            .iter()
            .flat_map(|s| s.excerpts.iter().flatten())
            .filter(|m| m.hit)
            .map(|m| m.content.clone())
            .collect()
    };
    let scope = owner(&key);
    for (query, expected) in [
        ("你好世界", "我今天早上对他说你好世界然后去吃饭了"),
        ("吃饭", "我今天早上对他说你好世界然后去吃饭了"),
        ("你好世界 吃饭", "我今天早上对他说你好世界然后去吃饭了"),
        ("天気", "東京の天気はどうですか"),
        ("날씨가", "오늘 날씨가 좋네요"),
    ] {
        let found = store
            .search_messages(query, scope.clone(), 5, 0)
            .await
            .unwrap();
        assert_eq!(hit(&found), [expected], "query {query}");
    }
    // All terms first; when no message has them all, any of them.
    let found = store
        .search_messages("你好世界 天気", scope.clone(), 5, 0)
        .await
        .unwrap();
    assert_eq!(hit(&found).len(), 2, "{found:?}");
    let found = store
        .search_messages("世界和平", scope, 5, 0)
        .await
        .unwrap();
    assert!(found.is_empty(), "{found:?}");
}

pub(crate) async fn all_terms_first_then_any_term(store: Store) {
    let key = dm("1");
    session_with(&store, &key, &["apples and pears", "only apples here"]).await;
    let found = store
        .search_messages("apples pears", owner(&key), 5, 0)
        .await
        .unwrap();
    let hits: Vec<&str> = found[0]
        .excerpts
        .iter()
        .flatten()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(hits, ["apples and pears"]);
    let found = store
        .search_messages("pears plums", owner(&key), 5, 0)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "falls back to any term: {found:?}");
}

pub(crate) async fn fts_operators_typed_by_a_user_never_error(store: Store) {
    let key = dm("1");
    session_with(
        &store,
        &key,
        &["a note: col:term and NEAR(x) with -x and \"quotes\" (parens"],
    )
    .await;
    for query in [
        "\"",
        "\"\"",
        "*",
        "a*",
        "NEAR(",
        "NEAR(a b)",
        "a AND",
        "AND",
        "OR NOT",
        "-x",
        "col:term",
        "content:x",
        "(",
        "((a)",
        "a)",
        "^a",
        "+",
        "{a b}",
        "\u{301}",
        "\u{93F}",
        "\u{93F}\u{93F} x",
        "%",
        "_",
        "\\",
        "'",
        ";--",
        "你\"好",
        "世*",
    ] {
        let result = store.search_messages(query, owner(&key), 5, 1).await;
        assert!(result.is_ok(), "query {query:?}: {result:?}");
    }
    let found = store
        .search_messages("col:term", owner(&key), 5, 0)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "typed syntax is searched as text");
    let found = store.search_messages("%", owner(&key), 5, 0).await.unwrap();
    assert!(found.is_empty(), "punctuation alone searches nothing");
}

pub(crate) async fn tool_results_are_not_searched(store: Store) {
    let key = dm("1");
    let s = session_with(&store, &key, &["read the file please"]).await;
    let call = ToolCall {
        id: "c".into(),
        name: "read_file".into(),
        arguments: "{}".into(),
    };
    store
        .append_messages(
            s,
            vec![ChatMessage::tool_result(&call, "quokka 袋鼠世界 quokka")],
        )
        .await
        .unwrap();
    for query in ["quokka", "袋鼠世界", "袋鼠"] {
        let found = store
            .search_messages(query, owner(&key), 5, 0)
            .await
            .unwrap();
        assert!(found.is_empty(), "{query}: {found:?}");
    }
}

pub(crate) async fn another_owners_sessions_are_never_returned(store: Store) {
    let ann = dm("1");
    let ann_in_group = group("-100", Some("1"));
    let bob = dm("2");
    let whole_group = group("-100", None);
    let secret = "the password is swordfish 剑鱼密码";
    let ann_dm = session_with(&store, &ann, &[secret]).await;
    let ann_group = session_with(&store, &ann_in_group, &[secret]).await;
    let bob_dm = session_with(&store, &bob, &[secret]).await;
    let shared = session_with(&store, &whole_group, &[secret]).await;

    for query in ["swordfish", "剑鱼密码", "剑鱼", "password swordfish"] {
        let sessions =
            |found: Vec<SessionHits>| -> Vec<i64> { found.iter().map(|h| h.session.id).collect() };
        let got = store
            .search_messages(query, owner(&ann), 10, 0)
            .await
            .unwrap();
        assert_eq!(
            sessions(got),
            [ann_dm],
            "{query}: private chats never include groups"
        );
        let got = store
            .search_messages(query, owner(&ann_in_group), 10, 0)
            .await
            .unwrap();
        assert_eq!(
            sessions(got),
            [ann_group],
            "{query}: a group never shows private chats"
        );
        let got = store
            .search_messages(query, owner(&bob), 10, 0)
            .await
            .unwrap();
        assert_eq!(sessions(got), [bob_dm], "{query}");
        let got = store
            .search_messages(query, owner(&whole_group), 10, 0)
            .await
            .unwrap();
        assert_eq!(sessions(got), [shared], "{query}");
        let got = store
            .search_messages(query, SearchScope::All, 10, 0)
            .await
            .unwrap();
        assert_eq!(
            sessions(got),
            [shared, bob_dm, ann_group, ann_dm],
            "{query}"
        );
    }
    let nobody = SearchScope::Owner("telegram:3".into());
    assert!(
        store
            .search_messages("swordfish", nobody, 10, 0)
            .await
            .unwrap()
            .is_empty()
    );

    // Reading on is scoped too: Bob's message id means nothing to Ann.
    let bob_msg = store.history(bob_dm, 1).await.unwrap()[0].id;
    assert_eq!(
        store
            .session_of_message(bob_msg, owner(&ann))
            .await
            .unwrap(),
        None
    );
    let s = store
        .session_of_message(bob_msg, owner(&bob))
        .await
        .unwrap();
    assert_eq!(s.map(|s| s.id), Some(bob_dm));
}

pub(crate) async fn read_on_continues_after_the_given_message(store: Store) {
    let key = dm("1");
    let texts: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let s = session_with(&store, &key, &texts).await;
    session_with(&store, &key, &["a later session"]).await;
    let all = store.history(s, 100).await.unwrap();
    let after = store.messages_after(s, all[3].id, 4).await.unwrap();
    assert_eq!(contents(&after), ["line 4", "line 5", "line 6", "line 7"]);
    let after = store.messages_after(s, all[7].id, 10).await.unwrap();
    assert_eq!(
        contents(&after),
        ["line 8", "line 9"],
        "stays in its session"
    );
}

pub(crate) async fn sessions_are_listed_and_exported(store: Store) {
    let first = session_of(&store, "1", &["one", "two"]).await;
    let second = session_of(&store, "2", &["three"]).await;
    let list = store.sessions_list(10, 0).await.unwrap();
    let ids: Vec<(i64, u64)> = list.iter().map(|s| (s.id, s.messages)).collect();
    assert_eq!(ids, [(second, 1), (first, 2)]);
    assert_eq!(list[1].key, SessionKey::direct(Platform::Telegram, "1"));
    assert_eq!(store.sessions_list(10, 1).await.unwrap()[0].id, first);
    let msgs = store.session_messages(first).await.unwrap().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[1].message, ChatMessage::assistant("two"));
    assert_eq!(store.session_messages(999).await.unwrap(), None);
    assert_eq!(store.session_summary(999).await.unwrap(), None);
}

pub(crate) async fn a_session_knows_the_chat_it_is_held_in(store: Store) {
    // A direct chat whose id is not the person's (Discord, Slack, Matrix).
    let key = dm("u-1");
    let mut msg = message("u-1", "m1", "hello there");
    msg.chat.id = "dm-chan-9".into();
    let inbox_id = store.inbox_insert(&msg).await.unwrap().unwrap();
    let session = store.session_active(&key).await.unwrap().id;
    assert_eq!(
        store.session_summary(session).await.unwrap().unwrap().chat,
        None
    );
    store
        .append_inbox_messages(session, vec![(Some(inbox_id), "hello there".into())])
        .await
        .unwrap();
    let summary = store.session_summary(session).await.unwrap().unwrap();
    assert_eq!(summary.chat, Some("dm-chan-9".into()));
    assert_eq!(
        store.sessions_list(1, 0).await.unwrap()[0].chat,
        summary.chat
    );
    let has = |chat: &'static str| {
        let store = store.clone();
        async move {
            store
                .chat_has_session(Platform::Telegram, &chat.into())
                .await
        }
    };
    assert!(has("dm-chan-9").await.unwrap());
    assert!(
        !has("u-1").await.unwrap(),
        "the person's id is not the chat"
    );
    assert!(
        !store
            .chat_has_session(Platform::Discord, &"dm-chan-9".into())
            .await
            .unwrap(),
        "nor another platform's chat of the same id"
    );
}

pub(crate) async fn an_imported_session_keeps_its_times_and_is_stored_once(store: Store) {
    let key = dm("7");
    let imported = ImportedSession {
        origin: "hermes-agent:20240301_090000_abcd".into(),
        key: key.clone(),
        chat: Some("7".into()),
        created_at: 1_709_283_600_000,
        ended_at: 1_709_283_780_000,
        end_reason: "imported".into(),
        messages: vec![
            (
                ChatMessage::user("the lighthouse key is under the mat"),
                1_709_283_600_000,
            ),
            (ChatMessage::assistant("noted"), 1_709_283_660_000),
        ],
    };
    let id = store.import_session(imported.clone()).await.unwrap();
    let id = id.expect("stored the first time");
    assert_eq!(store.import_session(imported).await.unwrap(), None);
    assert_eq!(
        store
            .setting(IMPORTED_SCOPE, "hermes-agent:20240301_090000_abcd")
            .await
            .unwrap(),
        Some(id.to_string())
    );

    let found = store
        .search_messages("lighthouse key", owner(&key), 5, 2)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].session.id, id);
    assert_eq!(found[0].session.created_at, 1_709_283_600_000);
    assert_eq!(
        contents(&found[0].excerpts[0]),
        ["the lighthouse key is under the mat", "noted"]
    );
    assert_eq!(found[0].excerpts[0][1].created_at, 1_709_283_660_000);
    let summary = store.session_summary(id).await.unwrap().unwrap();
    assert_eq!(summary.ended_at, Some(1_709_283_780_000));
    assert_eq!(summary.messages, 2);
    // The key has no active session: the next message starts a fresh one.
    assert_eq!(store.session_current(&key).await.unwrap(), None);
}
