//! Which gateway shard a listener runs, which servers' events it carries (Discord's rule), and
//! where its session is kept.

/// Where a session is kept ([`hermes_adapter::InboundSink::remember`]); a shard of several adds
/// its number.
const SESSION_KEY: &str = "gateway.session";

/// Which shard a listener runs: `index` of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardOf {
    pub index: u16,
    pub total: u16,
}

impl ShardOf {
    pub(crate) fn new(index: u16, total: u16) -> ShardOf {
        let total = total.max(1);
        ShardOf {
            index: index.min(total - 1),
            total,
        }
    }

    /// Whether events of server `guild` (`None`: a direct message) come on this shard, by
    /// Discord's rule: `(guild_id >> 22) % shards`, direct messages on shard 0.
    pub(crate) fn carries(&self, guild: Option<u64>) -> bool {
        let shard = guild.map_or(0, |g| (g >> 22) % u64::from(self.total));
        shard == u64::from(self.index)
    }

    /// Where this shard's session is kept.
    pub(crate) fn session_key(&self) -> String {
        if self.total == 1 {
            SESSION_KEY.to_owned()
        } else {
            format!("{SESSION_KEY}.{}of{}", self.index, self.total)
        }
    }
}

impl std::fmt::Display for ShardOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard {}/{}", self.index, self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_spread_over_shards_by_discords_rule_and_dms_come_on_shard_0() {
        // (197038439483310086 >> 22) = 46977624770: shard 0 of 2, shard 2 of 4.
        let guild = 197_038_439_483_310_086_u64;
        assert!(ShardOf::new(0, 2).carries(Some(guild)));
        assert!(!ShardOf::new(1, 2).carries(Some(guild)));
        assert!(ShardOf::new(2, 4).carries(Some(guild)));
        assert!(ShardOf::new(0, 2).carries(None));
        assert!(!ShardOf::new(1, 2).carries(None));
        // Every server on exactly one of four shards.
        for g in [guild, 41_771_983_423_143_937, 1 << 22, 3 << 22] {
            let on: Vec<u16> = (0..4)
                .filter(|i| ShardOf::new(*i, 4).carries(Some(g)))
                .collect();
            assert_eq!(on.len(), 1, "{g}: {on:?}");
        }
        assert!(ShardOf::new(3, 4).carries(Some(3 << 22)));
    }

    #[test]
    fn one_shard_keeps_the_old_session_key_and_several_keep_one_each() {
        assert_eq!(ShardOf::new(0, 1).session_key(), "gateway.session");
        assert_eq!(ShardOf::new(2, 4).session_key(), "gateway.session.2of4");
        assert_eq!(ShardOf::new(9, 4), ShardOf::new(3, 4));
        assert_eq!(ShardOf::new(1, 4).to_string(), "shard 1/4");
    }
}
