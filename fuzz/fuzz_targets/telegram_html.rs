//! Fuzz target: arbitrary markdown through `to_telegram_html`. The output must be HTML that
//! Telegram accepts (its tags only, balanced and nested as it allows, entities escaped), show no
//! more UTF-16 units than the markdown has (the chunker's limit is measured on the markdown), and
//! end without whitespace.
#![no_main]

use hermes_telegram::fuzzing::visible_html;
use hermes_telegram::to_telegram_html;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|markdown: &str| {
    let html = to_telegram_html(markdown);
    // Panics on a tag, entity or nesting Telegram would refuse.
    let shown = visible_html(&html).encode_utf16().count();
    let source = markdown.encode_utf16().count();
    assert!(
        shown <= source,
        "{shown} > {source}: {markdown:?} -> {html:?}"
    );
    assert_eq!(html, html.trim_end(), "trailing whitespace");
});
