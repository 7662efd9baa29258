//! SQLite-only checks of history search (its behaviour is in `store::suite`): the queries use
//! the full-text indexes newest first, without sorting.

use super::*;

#[tokio::test]
async fn word_search_reads_the_index_newest_first_without_sorting() {
    let store = SqliteStore::open_in_memory().unwrap();
    let plans = store
        .call(|c| {
            let mut plans = Vec::new();
            for (q, scope) in [
                ("hello world", SearchScope::Owner("telegram:1".into())),
                ("你好世界", SearchScope::Owner("telegram:1".into())),
                ("你好世界 天气", SearchScope::All),
            ] {
                let (sql, args) = candidates(&Query::parse(q), Combine::All, &scope);
                let plan: Vec<String> = c
                    .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?
                    .query_map(params_from_iter(args), |r| r.get::<_, String>(3))?
                    .collect::<rusqlite::Result<_>>()?;
                plans.push(plan.join("\n"));
            }
            Ok(plans)
        })
        .await
        .unwrap();
    for plan in plans {
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        assert!(plan.contains("VIRTUAL TABLE"), "{plan}");
    }
}
