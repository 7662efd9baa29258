//! Fuzz target: arbitrary markdown through `markdown_to_html` (the HTML part of a reply). Raw
//! HTML in the model's text is shown as text: the output holds no `<script`, `<img` or `<iframe`
//! and no event handler attribute.
#![no_main]

use hermes_email::markdown_to_html;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|markdown: &str| {
    let html = markdown_to_html(markdown).to_lowercase();
    for bad in ["<script", "<img", "<iframe", "<style"] {
        assert!(!html.contains(bad), "{bad} in {html:?} from {markdown:?}");
    }
});
