//! The daemon on the Anthropic Messages API, through the real binary: prompt-cache breakpoints
//! on the stable prefix (system prompt and tools), a prefix that is byte-identical across the
//! turns of a session, and cache reads counted in /usage.

use crate::support;

use serde_json::Value;
use support::WAIT;
use support::daemon::{ALICE, World};

fn cached(v: &Value) -> bool {
    v.get("cache_control").is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stable_prefix_is_cached_and_identical_across_turns() {
    let mut w = World::new("[llm]\nprovider = \"anthropic\"\n").await;
    let _daemon = w.start().await;
    for (i, text) in ["first question", "second question", "third question"]
        .into_iter()
        .enumerate()
    {
        w.tg.private_text(ALICE, "Alice", text);
        w.tg.wait_sent(i + 1, WAIT).await;
    }
    let reqs = w.llm.requests();
    assert!(reqs.iter().all(|r| r.is_anthropic()));
    assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
    let system = |i: usize| reqs[i].body["system"].clone();
    let tools = |i: usize| reqs[i].body["tools"].clone();
    assert!(
        cached(system(0).as_array().unwrap().last().unwrap()),
        "system breakpoint"
    );
    assert!(
        cached(tools(0).as_array().unwrap().last().unwrap()),
        "tools breakpoint"
    );
    let prefix = |i: usize| format!("{}{}", system(i), tools(i));
    assert_eq!(prefix(0), prefix(1), "byte-identical prefix across turns");
    assert_eq!(prefix(1), prefix(2));
    let breakpoints = reqs[2].body.to_string().matches("cache_control").count();
    assert!((2..=4).contains(&breakpoints), "{breakpoints} breakpoints");

    w.tg.private_text(ALICE, "Alice", "/usage");
    let sent = w.tg.wait_sent(4, WAIT).await;
    let usage = &sent[3].visible_text;
    assert!(
        !usage.contains("(0 from cache"),
        "cache reads are counted: {usage}"
    );
}
