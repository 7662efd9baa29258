//! Who may talk to the agent, and in which role: deny by default; per-platform allowlists (each
//! platform's section says who), a global allowlist, or an explicit allow-all make a user; the
//! operators (`[access]` and each section's `operators`) are served too, as operators. The
//! terminal (`hermes chat`) is its operator's.

use std::collections::{HashMap, HashSet};

use hermes_adapter::{Platform, UserId};

use crate::config::Config;
use crate::policy::Role;

/// Decides whether a sender is served.
#[derive(Debug, Clone, Default)]
pub struct Authorizer {
    allow_all: bool,
    /// `(None, id)`: a bare id from the global list, allowed on every platform.
    global: HashSet<(Option<Platform>, String)>,
    per_platform: HashMap<Platform, HashSet<String>>,
    /// Platforms whose allowlist entries may name whole domains (email).
    domains: HashSet<Platform>,
    /// Operators per platform, from `[access]` and each platform's section.
    operators: HashMap<Platform, HashSet<String>>,
}

impl Authorizer {
    pub fn from_config(config: &Config) -> Self {
        let global = config
            .gateway
            .allowed_users
            .iter()
            .map(|entry| match entry.split_once(':') {
                Some((p, id)) => match p.parse::<Platform>() {
                    Ok(p) => (Some(p), id.trim().to_owned()),
                    Err(_) => (None, entry.trim().to_owned()),
                },
                None => (None, entry.trim().to_owned()),
            })
            .collect();
        let mut per_platform = HashMap::new();
        let mut domains = HashSet::new();
        let mut operators = HashMap::new();
        for section in config.platforms() {
            let platform = section.platform();
            let named: HashSet<String> = section
                .operators()
                .into_iter()
                .chain(config.access.operators_on(platform))
                .map(|id| match platform {
                    Platform::Email => id.to_ascii_lowercase(),
                    _ => id,
                })
                .collect();
            operators.insert(platform, named);
            per_platform.insert(
                section.platform(),
                section.allowed_users().into_iter().collect(),
            );
            if section.allowlist_names_domains() {
                domains.insert(section.platform());
            }
        }
        Authorizer {
            allow_all: config.gateway.allow_all_users,
            global,
            per_platform,
            domains,
            operators,
        }
    }

    /// The sender's role, or `None` when they are not served.
    pub fn role(&self, platform: Platform, user: &UserId) -> Option<Role> {
        if platform == Platform::Cli || self.is_operator(platform, user) {
            return Some(Role::Operator);
        }
        self.allows_user(platform, user).then_some(Role::User)
    }

    /// Whether `user` is named as an operator on `platform`.
    pub fn is_operator(&self, platform: Platform, user: &UserId) -> bool {
        let id = user.as_str();
        let id = if platform == Platform::Email {
            std::borrow::Cow::Owned(id.to_ascii_lowercase())
        } else {
            std::borrow::Cow::Borrowed(id)
        };
        self.operators
            .get(&platform)
            .is_some_and(|set| set.contains(id.as_ref()))
    }

    /// Whether the sender is served (as a user or an operator).
    pub fn allows(&self, platform: Platform, user: &UserId) -> bool {
        self.role(platform, user).is_some()
    }

    fn allows_user(&self, platform: Platform, user: &UserId) -> bool {
        if self.allow_all {
            return true;
        }
        let id = user.as_str();
        self.per_platform.get(&platform).is_some_and(|set| {
            set.contains(id) || (self.domains.contains(&platform) && domain_allowed(set, id))
        }) || self.global.contains(&(Some(platform), id.to_owned()))
            || self.global.contains(&(None, id.to_owned()))
    }

    /// Whether nobody at all can be served on `platform` (worth a warning at startup).
    pub fn nobody_on(&self, platform: Platform) -> bool {
        !self.allow_all
            && self.operators.get(&platform).is_none_or(HashSet::is_empty)
            && self
                .per_platform
                .get(&platform)
                .is_none_or(HashSet::is_empty)
            && !self
                .global
                .iter()
                .any(|(p, _)| p.is_none() || *p == Some(platform))
    }
}

/// Whether an allowlist names the whole domain of an address (`example.com` or `@example.com`).
fn domain_allowed(set: &HashSet<String>, id: &str) -> bool {
    id.rsplit_once('@')
        .is_some_and(|(_, domain)| set.contains(domain) || set.contains(&format!("@{domain}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(global: &[&str], telegram: &[&str], all: bool) -> Config {
        let mut c = Config::default();
        c.gateway.allowed_users = global.iter().map(|s| s.to_string()).collect();
        c.telegram.allowed_users = telegram.iter().map(|s| s.to_string()).collect();
        c.gateway.allow_all_users = all;
        c
    }

    #[test]
    fn deny_by_default() {
        let a = Authorizer::from_config(&config(&[], &[], false));
        assert!(!a.allows(Platform::Telegram, &"1".into()));
        assert!(a.nobody_on(Platform::Telegram));
        assert!(a.allows(Platform::Cli, &"anyone".into()));
    }

    #[test]
    fn lists_and_allow_all() {
        let a = Authorizer::from_config(&config(&["7", "discord:8"], &["5"], false));
        assert!(a.allows(Platform::Telegram, &"5".into()));
        assert!(a.allows(Platform::Telegram, &"7".into()));
        assert!(a.allows(Platform::Discord, &"7".into()));
        assert!(a.allows(Platform::Discord, &"8".into()));
        assert!(!a.allows(Platform::Telegram, &"8".into()));
        assert!(!a.allows(Platform::Discord, &"5".into()));
        let all = Authorizer::from_config(&config(&[], &[], true));
        assert!(all.allows(Platform::Telegram, &"999".into()));
    }

    #[test]
    fn email_allowlists_name_addresses_or_whole_domains() {
        let mut c = Config::default();
        c.email.allowed_senders = vec![
            "alice@example.com".into(),
            "@corp.example".into(),
            "team.example".into(),
        ];
        let a = Authorizer::from_config(&c);
        assert!(a.allows(Platform::Email, &"alice@example.com".into()));
        assert!(a.allows(Platform::Email, &"bob@corp.example".into()));
        assert!(a.allows(Platform::Email, &"eve@team.example".into()));
        assert!(!a.allows(Platform::Email, &"bob@example.com".into()));
        assert!(!a.allows(Platform::Telegram, &"bob@corp.example".into()));
    }

    #[test]
    fn operators_are_served_as_operators_and_users_as_users() {
        let mut c = config(&["7"], &["5"], false);
        c.access.operators = vec!["telegram:9".into(), "email:Ops@Example.com".into()];
        c.discord.operators = vec!["11".into()];
        let a = Authorizer::from_config(&c);
        assert_eq!(
            a.role(Platform::Telegram, &"9".into()),
            Some(Role::Operator)
        );
        assert_eq!(a.role(Platform::Telegram, &"5".into()), Some(Role::User));
        assert_eq!(a.role(Platform::Telegram, &"7".into()), Some(Role::User));
        assert_eq!(
            a.role(Platform::Telegram, &"11".into()),
            None,
            "a Discord operator"
        );
        assert_eq!(
            a.role(Platform::Discord, &"11".into()),
            Some(Role::Operator)
        );
        assert_eq!(
            a.role(Platform::Email, &"ops@example.com".into()),
            Some(Role::Operator)
        );
        assert_eq!(
            a.role(Platform::Email, &"OPS@example.com".into()),
            Some(Role::Operator)
        );
        assert_eq!(
            a.role(Platform::Cli, &"anyone".into()),
            Some(Role::Operator)
        );
        assert!(!a.nobody_on(Platform::Discord), "an operator is somebody");
        let all = Authorizer::from_config(&config(&[], &[], true));
        assert_eq!(
            all.role(Platform::Telegram, &"999".into()),
            Some(Role::User),
            "allow-all makes users, not operators"
        );
    }
}
