//! How often and when each skill was last used, kept in the store's settings (scope
//! `skill:<name>`), so `skills_list` can show which skills earn their keep.

use crate::store::{Result, Settings};

/// Uses of one skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub count: u64,
    pub last_used: Option<jiff::Timestamp>,
}

fn scope(name: &str) -> String {
    format!("skill:{name}")
}

/// Count one use of skill `name`, now.
pub async fn record_use(store: &dyn Settings, name: &str) -> Result<()> {
    let scope = scope(name);
    store.increment_setting(&scope, "uses").await?;
    let now = jiff::Timestamp::now().as_millisecond().to_string();
    store.set_setting(&scope, "last_used", &now).await
}

/// The uses of skill `name` (zero when never used).
pub async fn usage(store: &dyn Settings, name: &str) -> Result<Usage> {
    let scope = scope(name);
    let count = store.setting(&scope, "uses").await?;
    let last = store.setting(&scope, "last_used").await?;
    Ok(Usage {
        count: count.and_then(|c| c.parse().ok()).unwrap_or(0),
        last_used: last
            .and_then(|ms| ms.parse().ok())
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()),
    })
}

/// Forget the uses of skill `name` (it was deleted).
pub async fn forget(store: &dyn Settings, name: &str) -> Result<()> {
    let scope = scope(name);
    store.delete_setting(&scope, "uses").await?;
    store.delete_setting(&scope, "last_used").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn uses_are_counted_with_the_last_time_and_forgotten() {
        let store = crate::store::Store::open_in_memory().unwrap();
        assert_eq!(usage(&*store, "a").await.unwrap(), Usage::default());
        let before = jiff::Timestamp::now();
        record_use(&*store, "a").await.unwrap();
        record_use(&*store, "a").await.unwrap();
        let u = usage(&*store, "a").await.unwrap();
        assert_eq!(u.count, 2);
        let last = u.last_used.unwrap();
        assert!(last.as_millisecond() >= before.as_millisecond(), "{last}");
        assert_eq!(usage(&*store, "b").await.unwrap().count, 0);
        forget(&*store, "a").await.unwrap();
        assert_eq!(usage(&*store, "a").await.unwrap(), Usage::default());
    }
}
