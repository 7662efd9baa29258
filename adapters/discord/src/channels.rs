//! What the adapter knows about Discord channels and roles: whether a channel is a DM, a server
//! channel or a thread (with its parent and owner), and which roles the bot holds in a server.
//! Gateway message events say none of this, so it is learned from thread events and, once per
//! channel, from `GET /channels/{id}`; both maps are bounded.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serenity::model::channel::{Channel, ChannelType, GuildChannel};
use serenity::model::id::{ChannelId, GuildId, UserId};

use crate::rest::Rest;

/// Entries kept per map before it is cleared (bounded memory however many channels exist).
pub(crate) const MAX_ENTRIES: usize = 10_000;

/// How long the bot's roles in a server are trusted before they are asked for again.
const ROLES_TTL: Duration = Duration::from_secs(600);

/// Where a message was posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Direct,
    Channel,
    Thread { parent: u64, owner: Option<u64> },
}

impl Place {
    pub(crate) fn of(channel: &GuildChannel) -> Place {
        match channel.kind {
            ChannelType::PublicThread | ChannelType::PrivateThread | ChannelType::NewsThread => {
                Place::Thread {
                    parent: channel.parent_id.map_or(0, ChannelId::get),
                    owner: channel.owner_id.map(UserId::get),
                }
            }
            _ => Place::Channel,
        }
    }
}

#[derive(Default)]
pub(crate) struct Channels {
    places: Mutex<HashMap<u64, Place>>,
    /// The server of each channel seen (`None`: a direct message channel).
    guilds: Mutex<HashMap<u64, Option<u64>>>,
    roles: Mutex<HashMap<u64, (Instant, Vec<u64>)>>,
}

impl Channels {
    pub(crate) fn remember(&self, channel: u64, place: Place) {
        if let Ok(mut map) = self.places.lock() {
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            map.insert(channel, place);
        }
    }

    fn remember_guild(&self, channel: u64, guild: Option<u64>) {
        if let Ok(mut map) = self.guilds.lock() {
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            map.insert(channel, guild);
        }
    }

    /// The server `channel` belongs to (`Some(None)`: a direct message channel), looked up
    /// once; `None` when Discord cannot say now.
    pub(crate) async fn guild_of(&self, rest: &Rest, channel: u64) -> Option<Option<u64>> {
        if let Some(known) = self.guilds.lock().ok()?.get(&channel).copied() {
            return Some(known);
        }
        let guild = match rest.http.get_channel(ChannelId::new(channel)).await {
            Ok(Channel::Guild(c)) => Some(c.guild_id.get()),
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(channel, error = %crate::rest::classify_serenity(e), "cannot look up a Discord channel's server");
                return None;
            }
        };
        self.remember_guild(channel, guild);
        Some(guild)
    }

    fn cached(&self, channel: u64) -> Option<Place> {
        self.places.lock().ok()?.get(&channel).copied()
    }

    /// Where `channel` is; a server channel that cannot be looked up counts as a plain channel
    /// (and is asked about again next time).
    pub(crate) async fn place(
        &self,
        rest: &Rest,
        channel: ChannelId,
        guild: Option<GuildId>,
    ) -> Place {
        let Some(guild) = guild else {
            return Place::Direct;
        };
        self.remember_guild(channel.get(), Some(guild.get()));
        if let Some(p) = self.cached(channel.get()) {
            return p;
        }
        match rest.http.get_channel(channel).await {
            Ok(Channel::Guild(c)) => {
                let place = Place::of(&c);
                self.remember(channel.get(), place);
                place
            }
            Ok(_) => {
                self.remember(channel.get(), Place::Direct);
                Place::Direct
            }
            Err(e) => {
                tracing::warn!(channel = channel.get(), error = %crate::rest::classify_serenity(e), "cannot look up a Discord channel; treating it as a plain channel");
                Place::Channel
            }
        }
    }

    /// The roles the bot holds in `guild` (its own managed role among them).
    pub(crate) async fn bot_roles(&self, rest: &Rest, guild: GuildId, me: u64) -> Vec<u64> {
        if let Ok(map) = self.roles.lock()
            && let Some((at, roles)) = map.get(&guild.get())
            && at.elapsed() < ROLES_TTL
        {
            return roles.clone();
        }
        match rest.http.get_member(guild, UserId::new(me)).await {
            Ok(member) => {
                let roles: Vec<u64> = member.roles.iter().map(|r| r.get()).collect();
                if let Ok(mut map) = self.roles.lock() {
                    if map.len() >= MAX_ENTRIES {
                        map.clear();
                    }
                    map.insert(guild.get(), (Instant::now(), roles.clone()));
                }
                roles
            }
            Err(e) => {
                tracing::warn!(guild = guild.get(), error = %crate::rest::classify_serenity(e), "cannot read the bot's roles; role mentions are not recognised");
                Vec::new()
            }
        }
    }
}
