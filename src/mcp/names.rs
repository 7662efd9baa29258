//! The names MCP tools get before the model: `mcp_<server>_<tool>`, made of `[A-Za-z0-9_-]`
//! only and at most [`MAX_NAME`] characters (the providers' limit), never two alike.

use std::collections::HashSet;

/// Longest tool name the providers accept.
pub const MAX_NAME: usize = 64;

/// `mcp_<server>_<tool>` with every other character made `_`.
fn plain(server: &str, tool: &str) -> String {
    format!("mcp_{server}_{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The name of `tool` of `server`, not one of `taken` (which it joins): the plain name when it
/// fits and is free, else its start and a short hash of the server's and tool's own names.
pub fn assign(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    let base = plain(server, tool);
    if base.len() <= MAX_NAME && taken.insert(base.clone()) {
        return base;
    }
    use sha2::Digest;
    for attempt in 0u32.. {
        let digest = sha2::Sha256::digest(format!("{server}\0{tool}\0{attempt}").as_bytes());
        let tag: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        let keep = MAX_NAME - tag.len() - 1;
        let name = format!("{}_{tag}", &base[..base.len().min(keep)]);
        if taken.insert(name.clone()) {
            return name;
        }
    }
    unreachable!("the hashes run out before the names do")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_short_and_distinct() {
        let mut taken = HashSet::new();
        assert_eq!(
            assign("files", "read_file", &mut taken),
            "mcp_files_read_file"
        );
        assert_eq!(
            assign("web", "fetch.url/v2", &mut taken),
            "mcp_web_fetch_url_v2"
        );
        // `fetch.url` and `fetch/url` both sanitise to `fetch_url`: the second is tagged.
        let a = assign("web", "fetch.url", &mut taken);
        let b = assign("web", "fetch/url", &mut taken);
        assert_eq!(a, "mcp_web_fetch_url");
        assert_ne!(a, b);
        assert!(b.starts_with("mcp_web_fetch_url_") && b.len() == "mcp_web_fetch_url".len() + 9);
        let long = "x".repeat(100);
        let c = assign("s", &long, &mut taken);
        let d = assign("s", &format!("{long}y"), &mut taken);
        for n in [&c, &d] {
            assert!(n.len() <= MAX_NAME, "{n}");
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
        assert_ne!(c, d);
        // The same inputs give the same names in a new listing (stable prompts).
        let mut again = HashSet::new();
        assign("files", "read_file", &mut again);
        assign("web", "fetch.url/v2", &mut again);
        assign("web", "fetch.url", &mut again);
        assert_eq!(assign("web", "fetch/url", &mut again), b);
    }
}
