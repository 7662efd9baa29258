//! Fuzz target: arbitrary markdown through the Matrix renderer. Raw HTML in the model's text is
//! shown as text, so every tag in the HTML body is one CommonMark itself produces, and the plain
//! body is the markdown as written.
#![no_main]

use hermes_matrix::fuzzing::render;
use libfuzzer_sys::fuzz_target;

const TAGS: [&str; 26] = [
    "p",
    "strong",
    "em",
    "del",
    "code",
    "pre",
    "a",
    "ul",
    "ol",
    "li",
    "blockquote",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "hr",
    "br",
    "img",
];

fuzz_target!(|markdown: &str| {
    let (plain, html) = render(markdown);
    assert_eq!(plain, markdown.trim_end());
    for tag in html.split('<').skip(1) {
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        assert!(
            TAGS.contains(&name.as_str()),
            "tag <{name}> in {html:?} from {markdown:?}"
        );
    }
});
