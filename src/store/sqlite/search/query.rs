//! Turning what a user typed into safe full-text queries.
//!
//! User text never reaches `MATCH` as written: FTS5 has its own query language (`"`, `*`, `NEAR(`,
//! `AND`, `-`, `col:`, parentheses), and a stray operator is a syntax error, or worse, a different
//! question. The text is split into terms (words, or phrases the user put in double quotes), each
//! term is trimmed of surrounding punctuation and written as an FTS5 string literal, so every
//! character inside it is data; the literals are then joined with `AND` (or `OR` on the retry).
//!
//! Which index answers depends on the script: the word index (`unicode61`) finds words, but
//! Chinese, Japanese and Korean have no spaces between words, so a query containing Han, Kana or
//! Hangul goes to the trigram index, which matches any substring of three or more characters.
//! Shorter terms (a two-character Chinese word is common) cannot be looked up in a trigram index
//! at all; they become `LIKE '%term%'` filters. In that mode every term of the query, Latin ones
//! included, matches as a substring (`ok` also finds "book").

/// At most this many terms are used; the rest of a very long query is ignored.
const MAX_TERMS: usize = 12;

/// A term longer than this (in characters) is cut; nobody searches for a paragraph.
const MAX_TERM_CHARS: usize = 200;

/// How the terms of a query are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Combine {
    All,
    Any,
}

impl Combine {
    pub(super) fn sql(self) -> &'static str {
        match self {
            Combine::All => " AND ",
            Combine::Any => " OR ",
        }
    }
}

/// A sanitized query: its terms, and which index can answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Query {
    pub terms: Vec<String>,
    /// Some term is Chinese, Japanese or Korean: use the trigram index and `LIKE`.
    pub cjk: bool,
}

impl Query {
    pub fn parse(text: &str) -> Query {
        let terms = terms(text);
        let cjk = terms.iter().any(|t| t.chars().any(is_cjk));
        Query { terms, cjk }
    }

    /// An FTS5 expression of the terms as string literals, for the word index.
    pub fn fts(&self, how: Combine) -> String {
        join(self.terms.iter().map(|t| fts_literal(t)), how)
    }

    /// An FTS5 expression for the trigram index over the terms it can look up (three characters
    /// or more), or `None` if there are none.
    pub fn trigram(&self, how: Combine) -> Option<String> {
        let long: Vec<String> = self
            .terms
            .iter()
            .filter(|t| t.chars().count() >= 3)
            .map(|t| fts_literal(t))
            .collect();
        (!long.is_empty()).then(|| join(long.into_iter(), how))
    }

    /// `LIKE` patterns (escaped with `\`) of the terms too short for the trigram index.
    pub fn short_patterns(&self) -> Vec<String> {
        self.terms
            .iter()
            .filter(|t| t.chars().count() < 3)
            .map(|t| like_pattern(t))
            .collect()
    }

    /// `LIKE` patterns of all terms.
    pub fn all_patterns(&self) -> Vec<String> {
        self.terms.iter().map(|t| like_pattern(t)).collect()
    }
}

/// The terms a query searches for, as [`Store::search_messages`](crate::store::Store) sees them:
/// words, and phrases in double quotes, without surrounding punctuation. Empty when nothing in
/// the text can be searched for (only punctuation or operators).
pub fn terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |raw: &str| {
        let t = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if !t.is_empty() && out.len() < MAX_TERMS {
            let t: String = t.chars().take(MAX_TERM_CHARS).collect();
            if !out.contains(&t) {
                out.push(t);
            }
        }
    };
    let mut rest = text;
    while !rest.is_empty() {
        // A phrase is a balanced pair of double quotes; an unbalanced quote is just punctuation.
        if let Some(open) = rest.find('"')
            && let Some(len) = rest[open + 1..].find('"')
        {
            rest[..open].split_whitespace().for_each(&mut push);
            let phrase = rest[open + 1..open + 1 + len].split_whitespace();
            push(&phrase.collect::<Vec<_>>().join(" "));
            rest = &rest[open + len + 2..];
        } else {
            rest.split_whitespace().for_each(&mut push);
            break;
        }
    }
    out
}

fn join(parts: impl Iterator<Item = String>, how: Combine) -> String {
    parts.collect::<Vec<_>>().join(how.sql())
}

/// `term` as an FTS5 string: in double quotes, inner quotes doubled. Everything inside is text
/// for the tokenizer, never an operator.
fn fts_literal(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// `%term%` with `\`, `%` and `_` escaped (use with `ESCAPE '\'`).
pub(in crate::store) fn like_pattern(term: &str) -> String {
    let mut p = String::with_capacity(term.len() + 2);
    p.push('%');
    for c in term.chars() {
        if matches!(c, '\\' | '%' | '_') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

/// Han ideographs, Hiragana, Katakana and Hangul: scripts written without spaces between words.
pub(in crate::store) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF       // Hiragana, Katakana
        | 0x31F0..=0x31FF     // Katakana phonetic extensions
        | 0xFF66..=0xFF9F     // half-width Katakana
        | 0x3400..=0x4DBF     // CJK extension A
        | 0x4E00..=0x9FFF     // CJK unified ideographs
        | 0xF900..=0xFAFF     // CJK compatibility ideographs
        | 0x20000..=0x3134F   // CJK extensions B-G and the compatibility supplement
        | 0x1100..=0x11FF     // Hangul Jamo
        | 0x3130..=0x318F     // Hangul compatibility Jamo
        | 0xAC00..=0xD7AF // Hangul syllables
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_become_quoted_text() {
        let q = Query::parse(r#"NEAR(a b) "x*" -y col:term a AND ("#);
        assert_eq!(q.terms, ["NEAR(a", "b", "x", "y", "col:term", "a", "AND"]);
        assert_eq!(
            q.fts(Combine::All),
            r#""NEAR(a" AND "b" AND "x" AND "y" AND "col:term" AND "a" AND "AND""#
        );
        assert!(!q.cjk);
    }

    #[test]
    fn phrases_quotes_and_punctuation() {
        assert_eq!(
            terms(r#"say "hello  world" now"#),
            ["say", "hello world", "now"]
        );
        assert_eq!(
            terms(r#"an "unbalanced quote"#),
            ["an", "unbalanced", "quote"]
        );
        assert_eq!(terms(r#"it"s"#), ["it\"s"]);
        assert_eq!(Query::parse(r#"it"s"#).fts(Combine::Any), r#""it""s""#);
        assert_eq!(terms(r#"" * - ( ) : "" AND and"#), ["AND", "and"]);
        assert!(terms("  ** ( ").is_empty());
    }

    #[test]
    fn cjk_terms_split_by_length() {
        let q = Query::parse("你好世界 天气 ok");
        assert!(q.cjk);
        assert_eq!(q.trigram(Combine::Any).unwrap(), r#""你好世界""#);
        assert_eq!(q.short_patterns(), ["%天气%", "%ok%"]);
        assert_eq!(Query::parse("天气").trigram(Combine::All), None);
        assert!(Query::parse("こんにちは").cjk && Query::parse("안녕").cjk);
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_pattern(r"50%_a\b"), r"%50\%\_a\\b%");
    }
}
