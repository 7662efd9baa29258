//! DM pairing (`access.pairing = true`): a stranger who writes to the bot in a direct chat gets a
//! one-time code instead of an answer, and an operator approves it from the command line
//! (`hermes pairing approve <platform> <code>`); approved people are served as users from then
//! on, across restarts and processes (they are stored). The rules of the reference systems:
//! 8-character codes valid one hour, at most 3 waiting per platform, one code per person per 10
//! minutes, codes stored only as hashes, and after 5 wrong codes in a row approvals on that
//! platform are locked for an hour. Nothing here calls the model.

use hermes_adapter::{Platform, UserId, now_millis};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::store::{Result, Settings};

/// Characters of a code: no 0/O, 1/I/L, so it survives being read aloud or retyped.
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_LEN: usize = 8;
const CODE_TTL_MS: i64 = 60 * 60 * 1000;
const MAX_PENDING: usize = 3;
const REQUEST_EVERY_MS: i64 = 10 * 60 * 1000;
const MAX_FAILURES: i64 = 5;
const LOCKOUT_MS: i64 = 60 * 60 * 1000;

/// Settings scopes: approved people, waiting codes (by hash), each person's last request, and a
/// platform's failed approvals.
const APPROVED: &str = "pairing:approved";
const PENDING: &str = "pairing:pending";
const ASKED: &str = "pairing:asked";
const FAILURES: &str = "pairing:failures";

/// A waiting code: who asked, until when.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pending {
    pub platform: Platform,
    pub user: String,
    pub name: String,
    pub expires_at: i64,
}

/// An approved person.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Approved {
    pub name: String,
    pub approved_at: i64,
}

fn person(platform: Platform, user: &str) -> String {
    format!("{platform}:{user}")
}

fn hash(platform: Platform, code: &str) -> String {
    let digest = Sha256::digest(format!("{platform}:{}", code.trim().to_ascii_uppercase()));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `user` was approved on `platform`.
pub async fn is_approved(store: &dyn Settings, platform: Platform, user: &UserId) -> Result<bool> {
    Ok(store
        .setting(APPROVED, &person(platform, user.as_str()))
        .await?
        .is_some())
}

/// What a stranger's direct message gets: the reply to send, or `None` to stay silent (they
/// asked less than 10 minutes ago).
pub async fn request(
    store: &dyn Settings,
    platform: Platform,
    user: &UserId,
    name: &str,
) -> Result<Option<String>> {
    let now = now_millis();
    let who = person(platform, user.as_str());
    if let Some(last) = store.setting(ASKED, &who).await?
        && last
            .parse::<i64>()
            .is_ok_and(|t| now - t < REQUEST_EVERY_MS)
    {
        return Ok(None);
    }
    let waiting = pending(store).await?;
    let others: Vec<&(String, Pending)> = waiting
        .iter()
        .filter(|(_, p)| p.platform == platform && p.user != user.as_str())
        .collect();
    store.set_setting(ASKED, &who, &now.to_string()).await?;
    if others.len() >= MAX_PENDING {
        return Ok(Some(
            "👋 I only talk to people my operator has approved, and too many requests are \
             waiting right now. Try again in an hour."
                .to_owned(),
        ));
    }
    // One code per person: a new one replaces theirs.
    for (key, p) in &waiting {
        if p.platform == platform && p.user == user.as_str() {
            store.delete_setting(PENDING, key).await?;
        }
    }
    let code = new_code();
    let record = Pending {
        platform,
        user: user.as_str().to_owned(),
        name: name.chars().take(80).collect(),
        expires_at: now + CODE_TTL_MS,
    };
    store
        .set_setting(
            PENDING,
            &hash(platform, &code),
            &serde_json::to_string(&record)?,
        )
        .await?;
    Ok(Some(format!(
        "👋 I only talk to people my operator has approved. Your pairing code is {code} \
         (valid for an hour). Send it to the operator; they approve you with:\n\
         hermes pairing approve {platform} {code}"
    )))
}

/// Waiting codes that have not expired (expired ones are deleted), with their keys.
pub async fn pending(store: &dyn Settings) -> Result<Vec<(String, Pending)>> {
    let now = now_millis();
    let mut out = Vec::new();
    for (key, value) in store.settings_in(PENDING).await? {
        match serde_json::from_str::<Pending>(&value) {
            Ok(p) if p.expires_at > now => out.push((key, p)),
            _ => store.delete_setting(PENDING, &key).await?,
        }
    }
    Ok(out)
}

/// Approved people as `(platform:user, record)`.
pub async fn approved(store: &dyn Settings) -> Result<Vec<(String, Approved)>> {
    Ok(store
        .settings_in(APPROVED)
        .await?
        .into_iter()
        .filter_map(|(k, v)| Some((k, serde_json::from_str(&v).ok()?)))
        .collect())
}

/// Approve the person behind `code` on `platform`: their id and name, or why not.
pub async fn approve(
    store: &dyn Settings,
    platform: Platform,
    code: &str,
) -> Result<std::result::Result<Pending, String>> {
    let now = now_millis();
    let lock_key = platform.as_str();
    let (failures, since) = match store.setting(FAILURES, lock_key).await? {
        Some(v) => v
            .split_once(':')
            .and_then(|(n, t)| Some((n.parse().ok()?, t.parse().ok()?)))
            .unwrap_or((0i64, 0i64)),
        None => (0, 0),
    };
    if failures >= MAX_FAILURES && now - since < LOCKOUT_MS {
        let minutes = ((LOCKOUT_MS - (now - since)).max(0) as u64).div_ceil(60_000);
        return Ok(Err(format!(
            "{MAX_FAILURES} wrong codes in a row: approvals on {platform} are locked for \
             {minutes} more minutes"
        )));
    }
    let key = hash(platform, code);
    let found = match store.setting(PENDING, &key).await? {
        Some(v) => serde_json::from_str::<Pending>(&v)
            .ok()
            .filter(|p| p.expires_at > now),
        None => None,
    };
    let Some(p) = found else {
        let failures = if failures >= MAX_FAILURES {
            1
        } else {
            failures + 1
        };
        store
            .set_setting(FAILURES, lock_key, &format!("{failures}:{now}"))
            .await?;
        return Ok(Err(format!(
            "no waiting code {code} on {platform} (wrong, expired or already used)"
        )));
    };
    let record = Approved {
        name: p.name.clone(),
        approved_at: now,
    };
    store
        .set_setting(
            APPROVED,
            &person(platform, &p.user),
            &serde_json::to_string(&record)?,
        )
        .await?;
    store.delete_setting(PENDING, &key).await?;
    store.delete_setting(FAILURES, lock_key).await?;
    Ok(Ok(p))
}

/// Forget an approved person; whether they were approved.
pub async fn revoke(store: &dyn Settings, platform: Platform, user: &str) -> Result<bool> {
    let who = person(platform, user);
    let was = store.setting(APPROVED, &who).await?.is_some();
    store.delete_setting(APPROVED, &who).await?;
    Ok(was)
}

fn new_code() -> String {
    let mut bytes = [0u8; CODE_LEN];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness (never seen on Linux): the clock, unique though guessable.
        bytes = (now_millis() as u64).to_le_bytes();
    }
    bytes
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn codes_approve_once_and_wrong_ones_lock_the_platform() {
        let store = crate::store::Store::open_in_memory().unwrap();
        let s = store.settings();
        let alice = UserId::from("42");
        let reply = request(&*s, Platform::Telegram, &alice, "Alice")
            .await
            .unwrap()
            .unwrap();
        let code = reply
            .split_whitespace()
            .find(|w| w.len() == CODE_LEN && w.bytes().all(|b| ALPHABET.contains(&b)))
            .unwrap()
            .to_owned();
        // Asking again within 10 minutes gives nothing new.
        assert!(
            request(&*s, Platform::Telegram, &alice, "Alice")
                .await
                .unwrap()
                .is_none()
        );
        // The code is stored hashed only.
        assert!(
            s.settings_in(PENDING)
                .await
                .unwrap()
                .iter()
                .all(|(k, v)| !k.contains(&code) && !v.contains(&code))
        );
        assert!(
            approve(&*s, Platform::Discord, &code)
                .await
                .unwrap()
                .is_err(),
            "another platform's code"
        );
        let p = approve(&*s, Platform::Telegram, &code.to_lowercase())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(p.user, "42");
        assert!(is_approved(&*s, Platform::Telegram, &alice).await.unwrap());
        assert!(
            approve(&*s, Platform::Telegram, &code)
                .await
                .unwrap()
                .is_err(),
            "used once"
        );
        for _ in 0..4 {
            assert!(
                approve(&*s, Platform::Telegram, "WRONG123")
                    .await
                    .unwrap()
                    .is_err()
            );
        }
        let locked = approve(&*s, Platform::Telegram, "WRONG123")
            .await
            .unwrap()
            .unwrap_err();
        assert!(locked.contains("locked"), "{locked}");
        assert!(revoke(&*s, Platform::Telegram, "42").await.unwrap());
        assert!(!is_approved(&*s, Platform::Telegram, &alice).await.unwrap());
    }

    #[tokio::test]
    async fn an_expired_code_approves_nobody_and_is_forgotten() {
        let store = crate::store::Store::open_in_memory().unwrap();
        let s = store.settings();
        let old = Pending {
            platform: Platform::Telegram,
            user: "7".into(),
            name: "Old".into(),
            expires_at: now_millis() - 1,
        };
        let key = hash(Platform::Telegram, "ABCD2345");
        let record = serde_json::to_string(&old).unwrap();
        s.set_setting(PENDING, &key, &record).await.unwrap();
        let refused = approve(&*s, Platform::Telegram, "ABCD2345").await.unwrap();
        assert!(refused.unwrap_err().contains("expired"));
        assert!(
            !is_approved(&*s, Platform::Telegram, &UserId::from("7"))
                .await
                .unwrap()
        );
        assert!(pending(&*s).await.unwrap().is_empty());
        assert!(s.settings_in(PENDING).await.unwrap().is_empty(), "purged");
    }

    #[tokio::test]
    async fn at_most_three_codes_wait_per_platform() {
        let store = crate::store::Store::open_in_memory().unwrap();
        let s = store.settings();
        for id in ["1", "2", "3"] {
            let r = request(&*s, Platform::Telegram, &UserId::from(id), "x")
                .await
                .unwrap()
                .unwrap();
            assert!(r.contains("pairing code"), "{r}");
        }
        let full = request(&*s, Platform::Telegram, &UserId::from("4"), "x")
            .await
            .unwrap()
            .unwrap();
        assert!(full.contains("too many requests"), "{full}");
        let other = request(&*s, Platform::Slack, &UserId::from("4"), "x")
            .await
            .unwrap()
            .unwrap();
        assert!(other.contains("pairing code"), "{other}");
    }
}
