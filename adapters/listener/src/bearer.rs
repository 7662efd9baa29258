//! Bearer tokens on the daemon's ports: `Authorization: Bearer <token>` compared in time that
//! depends only on the lengths, never on where the first wrong byte is.

use axum::http::{HeaderMap, header};

/// Whether `headers` carry `Authorization: Bearer <token>` with exactly `token`.
pub fn carries(headers: &HeaderMap, token: &str) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    same(given.as_bytes(), token.as_bytes())
}

/// Equal, in time that depends only on the lengths.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_passes() {
        assert!(same(b"token", b"token") && !same(b"token", b"tokem") && !same(b"tok", b"token"));
        let mut headers = HeaderMap::new();
        assert!(!carries(&headers, "secret"));
        headers.insert(header::AUTHORIZATION, "Bearer secret".parse().unwrap());
        assert!(carries(&headers, "secret") && !carries(&headers, "secre"));
        headers.insert(header::AUTHORIZATION, "Basic secret".parse().unwrap());
        assert!(!carries(&headers, "secret"));
    }
}
