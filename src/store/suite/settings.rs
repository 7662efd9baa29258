//! Settings: set, replace, delete, count.

use crate::store::*;

pub(crate) async fn settings_are_set_replaced_and_deleted(store: Store) {
    assert_eq!(store.setting("s", "level").await.unwrap(), None);
    store.set_setting("s", "level", "safe").await.unwrap();
    store.set_setting("s", "level", "auto").await.unwrap();
    store
        .set_setting("t", "level", "full-access")
        .await
        .unwrap();
    assert_eq!(
        store.setting("s", "level").await.unwrap().as_deref(),
        Some("auto")
    );
    store.delete_setting("s", "level").await.unwrap();
    assert_eq!(store.setting("s", "level").await.unwrap(), None);
    assert_eq!(
        store.setting("t", "level").await.unwrap().as_deref(),
        Some("full-access")
    );
}

pub(crate) async fn counters_start_at_one_and_count_up(store: Store) {
    assert_eq!(store.increment_setting("s", "uses").await.unwrap(), 1);
    assert_eq!(store.increment_setting("s", "uses").await.unwrap(), 2);
    store.set_setting("s", "junk", "x").await.unwrap();
    assert_eq!(store.increment_setting("s", "junk").await.unwrap(), 1);
    assert_eq!(
        store.setting("s", "uses").await.unwrap().as_deref(),
        Some("2")
    );
}

pub(crate) async fn a_scope_lists_its_settings_by_name(store: Store) {
    store.set_setting("pairs", "b", "2").await.unwrap();
    store.set_setting("pairs", "a", "1").await.unwrap();
    store.set_setting("other", "c", "3").await.unwrap();
    assert_eq!(
        store.settings_in("pairs").await.unwrap(),
        [("a".into(), "1".into()), ("b".into(), "2".into())]
    );
    assert!(store.settings_in("none").await.unwrap().is_empty());
}
