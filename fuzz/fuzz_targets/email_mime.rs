//! Fuzz target: arbitrary bytes as a mail through the adapter's screening and parsing (header
//! screen, sender authentication, MIME walk, charsets, HTML to text, quoted history trimmed,
//! the untrusted frame). Must never panic; a parsed mail has an id and a sender.
#![no_main]

use hermes_email::Rules;
use hermes_email::auth::Policy;
use hermes_email::parse::{MailRef, parse, screen_header};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let rules = Rules {
        own_address: "bot@localhost".into(),
        allowed_senders: vec!["alice@localhost".into(), "@example.org".into()],
        auth: Policy {
            authserv_ids: vec!["mx.test".into()],
            require_pass: false,
            trust_unauthenticated: true,
            rule: String::new(),
        },
        max_attachment_bytes: 10_000,
        max_mail_bytes: 1_000_000,
    };
    let at = MailRef {
        uid_validity: 7,
        uid: 3,
    };
    let _ = screen_header(data, at, &rules);
    if let Ok(parsed) = parse(data, at, &rules) {
        assert!(!parsed.message.id.as_str().is_empty(), "mail without an id");
        assert!(
            !parsed.message.sender.id.as_str().is_empty(),
            "mail without a sender"
        );
    }
});
