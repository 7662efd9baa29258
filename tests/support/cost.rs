//! The cost of one terminal call in a backend, for the numbers the README and the issue notes
//! report (run by hand: `cargo nextest run -E 'test(/call_cost/)' --run-ignored only
//! --no-capture`). Measured, not asserted: timings belong to reports, not to tests.

use std::time::{Duration, Instant};

use hermes::tools::terminal::{TerminalSettings, TerminalTool};
use hermes::tools::{Tool, ToolContext};

/// Median and minimum of `runs` calls of `true` through the terminal built from `settings`,
/// after one warm-up call (which makes a container or a connection).
pub async fn call_cost(settings: TerminalSettings, runs: usize) -> (Duration, Duration) {
    let tool = TerminalTool::new(settings);
    let ctx = ToolContext::for_tests();
    let call = || tool.call(serde_json::json!({"command": "true"}), &ctx);
    let warm = call().await.expect("the warm-up call");
    assert!(warm.contains("exit code: 0"), "{warm}");
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let out = call().await.expect("a call");
        times.push(started.elapsed());
        assert!(out.contains("exit code: 0"), "{out}");
    }
    times.sort();
    (times[runs / 2], times[0])
}
