//! Who really sent a mail: the receiving server's `Authentication-Results` header (RFC 8601),
//! read only from a server the operator named, and whether it shows a DMARC or DKIM pass aligned
//! with the `From:` domain.
//!
//! Anyone can write an `Authentication-Results` header into the mail they send. The receiving
//! server *prepends* its own, above everything the sender wrote, so the only header worth reading
//! is the topmost one whose authserv-id (the first word of the value, e.g. `mx.example.com`) is a
//! server the operator configured (`authserv_ids`). Every other header is ignored, whatever it
//! claims. A server that strips forged copies of its own header (most do) only makes this safer.
//!
//! A sender counts as authenticated when that header shows `dmarc=pass` (for the From domain,
//! when the header names it with `header.from`), or `dkim=pass` for a signing domain
//! (`header.d`) that aligns with the From domain: the same, or one a subdomain of the other
//! (DMARC's relaxed alignment, without the public suffix list). SPF alone never authenticates:
//! it vouches for the envelope sender, not for `From:`.

/// One `method=result` of a header, with its `ptype.property=value` properties (names lowercase).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodResult {
    pub method: String,
    pub result: String,
    pub properties: Vec<(String, String)>,
}

impl MethodResult {
    /// The value of `ptype.property` (lowercase name), if present.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl std::fmt::Display for MethodResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.method, self.result)?;
        for (k, v) in &self.properties {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

/// One parsed `Authentication-Results` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthResults {
    /// Who wrote it (lowercase).
    pub authserv_id: String,
    pub results: Vec<MethodResult>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Equals,
    Semicolon,
}

/// Split an (unfolded or folded) header value into words, `=` and `;`, dropping `(comments)`
/// (nested, with `\` escapes) and unquoting `"quoted strings"`.
fn tokens(value: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = value.chars().peekable();
    let flush = |word: &mut String, out: &mut Vec<Token>| {
        if !word.is_empty() {
            out.push(Token::Word(std::mem::take(word)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '(' => {
                flush(&mut word, &mut out);
                let mut depth = 1;
                while depth > 0 {
                    match chars.next() {
                        Some('\\') => {
                            chars.next();
                        }
                        Some('(') => depth += 1,
                        Some(')') => depth -= 1,
                        Some(_) => {}
                        None => break,
                    }
                }
            }
            '"' => {
                while let Some(q) = chars.next() {
                    match q {
                        '\\' => {
                            if let Some(e) = chars.next() {
                                word.push(e);
                            }
                        }
                        '"' => break,
                        '\r' | '\n' => {}
                        q => word.push(q),
                    }
                }
            }
            '=' => {
                flush(&mut word, &mut out);
                out.push(Token::Equals);
            }
            ';' => {
                flush(&mut word, &mut out);
                out.push(Token::Semicolon);
            }
            c if c.is_whitespace() => flush(&mut word, &mut out),
            c => word.push(c),
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Parse the value of one `Authentication-Results` header:
/// `authserv-id [version] ; method[/version]=result [reason=…] ptype.property=value … ; …`
/// (or `; none`). `None` when there is no authserv-id.
pub fn parse(value: &str) -> Option<AuthResults> {
    let tokens = tokens(value);
    let mut groups = tokens.split(|t| *t == Token::Semicolon);
    let authserv_id = match groups.next()?.first()? {
        Token::Word(w) => w.to_ascii_lowercase(),
        _ => return None,
    };
    let mut results = Vec::new();
    for group in groups {
        let mut pairs = Vec::new();
        let mut i = 0;
        while i < group.len() {
            match (&group[i], group.get(i + 1), group.get(i + 2)) {
                (Token::Word(k), Some(Token::Equals), Some(Token::Word(v))) => {
                    pairs.push((k.to_ascii_lowercase(), v.clone()));
                    i += 3;
                }
                // A stray word (`none`) or `=`: not part of a pair.
                _ => i += 1,
            }
        }
        let mut pairs = pairs.into_iter();
        let Some((method, result)) = pairs.next() else {
            continue;
        };
        let method = method.split('/').next().unwrap_or("").to_owned();
        let properties = pairs.filter(|(k, _)| k.contains('.')).collect();
        results.push(MethodResult {
            method,
            result: result.to_ascii_lowercase(),
            properties,
        });
    }
    Some(AuthResults {
        authserv_id,
        results,
    })
}

/// Whether `id` is `configured` or one of its subdomains (both lowercase).
fn is_or_under(id: &str, configured: &str) -> bool {
    let configured = configured.trim_end_matches('.');
    let id = id.trim_end_matches('.');
    !configured.is_empty()
        && (id == configured
            || id
                .strip_suffix(configured)
                .is_some_and(|rest| rest.ends_with('.')))
}

/// Relaxed alignment: the same domain, or one a subdomain of the other.
pub fn aligned(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    is_or_under(&a, &b) || is_or_under(&b, &a)
}

/// The header to believe: the topmost (first in the file) `Authentication-Results` whose
/// authserv-id is one of `trusted` or a subdomain of one.
pub fn trusted_results(mail: &mail_parser::Message<'_>, trusted: &[String]) -> Option<AuthResults> {
    let raw = mail.raw_message.as_ref();
    let mut headers: Vec<&mail_parser::Header<'_>> = mail
        .headers()
        .iter()
        .filter(|h| {
            h.name
                .as_str()
                .eq_ignore_ascii_case("Authentication-Results")
        })
        .collect();
    headers.sort_by_key(|h| h.offset_field);
    headers.into_iter().find_map(|h| {
        let value = raw.get(h.offset_start as usize..h.offset_end as usize)?;
        let ar = parse(&String::from_utf8_lossy(value))?;
        trusted
            .iter()
            .any(|t| is_or_under(&ar.authserv_id, &t.to_ascii_lowercase()))
            .then_some(ar)
    })
}

/// What the trusted header says about the sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// An aligned DMARC or DKIM pass (the result that proves it).
    Pass(String),
    /// An explicit SPF, DKIM or DMARC failure and no aligned pass.
    Fail(String),
    /// Neither: no results, `none`, `neutral`, or a pass for another domain.
    Unproven(String),
}

/// Judge `ar` (a trusted header) for a mail whose `From:` domain is `from_domain`.
pub fn verdict(ar: &AuthResults, from_domain: &str) -> Verdict {
    for r in ar.results.iter().filter(|r| r.result == "pass") {
        let proves = match r.method.as_str() {
            "dmarc" => r
                .property("header.from")
                .is_none_or(|d| aligned(d, from_domain)),
            "dkim" => r
                .property("header.d")
                .or_else(|| {
                    r.property("header.i")
                        .map(|i| i.rsplit('@').next().unwrap_or(i))
                })
                .is_some_and(|d| aligned(d, from_domain)),
            _ => false,
        };
        if proves {
            return Verdict::Pass(format!("{r} from {}", ar.authserv_id));
        }
    }
    let failed = ar.results.iter().find(|r| {
        matches!(r.method.as_str(), "spf" | "dkim" | "dmarc")
            && matches!(r.result.as_str(), "fail" | "softfail" | "permerror")
    });
    if let Some(r) = failed {
        return Verdict::Fail(format!("{r} (from {})", ar.authserv_id));
    }
    let seen: Vec<String> = ar.results.iter().map(|r| r.to_string()).collect();
    Verdict::Unproven(format!(
        "no aligned dmarc or dkim pass for {from_domain} from {} ({})",
        ar.authserv_id,
        if seen.is_empty() {
            "no results".to_owned()
        } else {
            seen.join("; ")
        }
    ))
}

/// How much sender authentication the adapter insists on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Authserv-ids of the receiving server(s) (lowercase); each also covers its subdomains.
    pub authserv_ids: Vec<String>,
    /// Serve only senders with an aligned pass; otherwise only explicit failures are refused.
    pub require_pass: bool,
    /// Serve mail that carries no header from a trusted server (as unauthenticated).
    pub trust_unauthenticated: bool,
    /// The rule in one line, as `hermes doctor` says it (logged at start).
    pub rule: String,
}

impl Policy {
    /// The rule in force, in the words the operator's configuration chose (start-up log).
    pub fn describe(&self) -> &str {
        &self.rule
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(headers: &str) -> Vec<u8> {
        format!("{headers}From: <alice@example.com>\r\nSubject: hi\r\n\r\nbody\r\n").into_bytes()
    }

    fn judge(raw: &[u8], trusted: &[&str]) -> Option<Verdict> {
        let trusted: Vec<String> = trusted.iter().map(|s| s.to_string()).collect();
        let m = mail_parser::MessageParser::default().parse(raw).unwrap();
        trusted_results(&m, &trusted).map(|ar| verdict(&ar, "example.com"))
    }

    #[test]
    fn a_header_is_parsed_with_comments_folding_quotes_and_versions() {
        let ar = parse(
            "mx.example.com 1 (the MX);\r\n\tspf=pass (sender ok) smtp.mailfrom=alice@example.com;\r\n dkim/1 = pass reason=\"good sig; really\" header.d=Example.COM header.s=sel (comment (nested\\))) ;\r\n dmarc=pass (p=reject) header.from=example.com",
        )
        .unwrap();
        assert_eq!(ar.authserv_id, "mx.example.com");
        assert_eq!(ar.results.len(), 3, "{ar:?}");
        assert_eq!(ar.results[0].method, "spf");
        assert_eq!(
            ar.results[0].property("smtp.mailfrom"),
            Some("alice@example.com")
        );
        assert_eq!(ar.results[1].method, "dkim");
        assert_eq!(ar.results[1].result, "pass");
        assert_eq!(ar.results[1].property("header.d"), Some("Example.COM"));
        assert_eq!(ar.results[1].property("header.s"), Some("sel"));
        assert_eq!(ar.results[1].property("reason"), None);
        assert_eq!(ar.results[2].property("header.from"), Some("example.com"));
        let none = parse("mx.example.com; none").unwrap();
        assert!(none.results.is_empty());
        assert_eq!(parse("(only a comment)"), None);
    }

    #[test]
    fn a_forged_header_below_the_servers_own_is_ignored() {
        // The server prepended its verdict; the sender wrote the pass further down.
        let raw = mail(
            "Authentication-Results: mx.example.com; dmarc=fail header.from=example.com\r\n\
             Received: from somewhere\r\n\
             Authentication-Results: mx.example.com; dkim=pass header.d=example.com; dmarc=pass header.from=example.com\r\n",
        );
        assert!(matches!(
            judge(&raw, &["mx.example.com"]),
            Some(Verdict::Fail(_))
        ));
    }

    #[test]
    fn headers_from_servers_not_configured_are_not_read() {
        let raw = mail(
            "Authentication-Results: evil.test; dmarc=pass header.from=example.com\r\n\
             Authentication-Results: mx.example.com; dmarc=none header.from=example.com\r\n",
        );
        assert!(matches!(
            judge(&raw, &["mx.example.com"]),
            Some(Verdict::Unproven(_))
        ));
        assert_eq!(judge(&raw, &["other.test"]), None);
        assert_eq!(judge(&raw, &[]), None);
        // A configured id covers its subdomains, not look-alikes.
        let sub = mail("Authentication-Results: in1.mx.example.com; dmarc=pass\r\n");
        assert!(matches!(
            judge(&sub, &["mx.example.com"]),
            Some(Verdict::Pass(_))
        ));
        let alike = mail("Authentication-Results: evilmx.example.com; dmarc=pass\r\n");
        assert_eq!(judge(&alike, &["mx.example.com"]), None);
    }

    #[test]
    fn only_an_aligned_pass_authenticates() {
        let pass = |results: &str| {
            let ar = parse(&format!("mx; {results}")).unwrap();
            verdict(&ar, "corp.example.com")
        };
        assert!(matches!(
            pass("dmarc=pass header.from=corp.example.com"),
            Verdict::Pass(_)
        ));
        assert!(matches!(
            pass("dmarc=pass header.from=other.test"),
            Verdict::Unproven(_)
        ));
        assert!(matches!(
            pass("dkim=pass header.d=example.com"),
            Verdict::Pass(_)
        ));
        assert!(matches!(
            pass("dkim=pass header.d=mail.corp.example.com"),
            Verdict::Pass(_)
        ));
        assert!(matches!(
            pass("dkim=pass header.i=@corp.example.com"),
            Verdict::Pass(_)
        ));
        assert!(matches!(
            pass("dkim=pass header.d=evil.test; spf=pass smtp.mailfrom=corp.example.com"),
            Verdict::Unproven(_)
        ));
        assert!(matches!(
            pass("dkim=pass header.d=notcorp.example.com"),
            Verdict::Unproven(_)
        ));
        assert!(matches!(pass("dmarc=none"), Verdict::Unproven(_)));
        assert!(matches!(pass("spf=softfail"), Verdict::Fail(_)));
        // A forwarded mail: SPF fails, the aligned signature survives.
        assert!(matches!(
            pass("spf=fail; dkim=pass header.d=corp.example.com"),
            Verdict::Pass(_)
        ));
    }
}
