//! Gateway events -> [`Message`]: the sender, the chat and thread, attachments, and the trigger
//! by Discord's rules (a DM; in servers a mention of the bot or of one of its roles, a reply to
//! the bot, a thread the bot owns, a free-response channel; everything else is ambient).

use hermes_adapter::{
    Attachment, AttachmentKind, Chat, ChatKind, Message, Platform, ReplyRef, Sender, Trigger,
    UnixMillis,
};
use serenity::model::application::ComponentInteraction;
use serenity::model::channel::{Message as DiscordMessage, MessageType};
use serenity::model::id::{ChannelId, GuildId};
use serenity::model::user::User;

use crate::DiscordSettings;
use crate::channels::Place;

/// Discord's epoch (2015-01-01) in Unix milliseconds; a snowflake's top bits count from it.
const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;

/// When a snowflake id was created.
pub(crate) fn snowflake_time(id: u64) -> UnixMillis {
    (id >> 22) as i64 + DISCORD_EPOCH_MS
}

/// Whether a server (and the member's roles) passes the guild and role filters. DMs always do.
pub(crate) fn heard(s: &DiscordSettings, guild: Option<GuildId>, roles: Option<&[u64]>) -> bool {
    let Some(guild) = guild else {
        return true;
    };
    if !s.allowed_guilds.is_empty() && !s.allowed_guilds.contains(&guild.get()) {
        return false;
    }
    s.allowed_roles.is_empty()
        || roles.is_some_and(|r| r.iter().any(|id| s.allowed_roles.contains(id)))
}

fn sender_of(user: &User, nick: Option<&str>) -> Sender {
    let display = nick
        .or(user.global_name.as_deref())
        .unwrap_or(&user.name)
        .to_owned();
    Sender {
        id: user.id.get().to_string().into(),
        display_name: display,
        handle: Some(user.name.clone()),
        is_bot: user.bot,
    }
}

/// The chat (and thread) of a channel.
fn chat_of(channel: ChannelId, place: Place) -> (Chat, Option<hermes_adapter::ThreadId>) {
    let (id, kind, thread) = match place {
        Place::Direct => (channel.get(), ChatKind::Direct, None),
        Place::Channel => (channel.get(), ChatKind::Group, None),
        Place::Thread { parent, .. } => (parent, ChatKind::Group, Some(channel.get())),
    };
    (
        Chat {
            id: id.to_string().into(),
            kind,
            title: None,
        },
        thread.map(|t| t.to_string().into()),
    )
}

fn attachment_kind(mime: Option<&str>) -> AttachmentKind {
    match mime.and_then(|m| m.split('/').next()) {
        Some("image") => AttachmentKind::Image,
        Some("audio") => AttachmentKind::Audio,
        Some("video") => AttachmentKind::Video,
        _ => AttachmentKind::Document,
    }
}

/// The text with the bot's own mentions (user and role) removed and other users' mentions shown
/// as `@name`.
fn clean_text(m: &DiscordMessage, me: u64, bot_roles: &[u64]) -> String {
    let mut text = m.content.clone();
    for tag in [format!("<@{me}>"), format!("<@!{me}>")] {
        text = text.replace(&tag, " ");
    }
    for role in bot_roles {
        text = text.replace(&format!("<@&{role}>"), " ");
    }
    for user in m.mentions.iter().filter(|u| u.id.get() != me) {
        let name = format!("@{}", user.global_name.as_deref().unwrap_or(&user.name));
        for tag in [format!("<@{}>", user.id), format!("<@!{}>", user.id)] {
            text = text.replace(&tag, &name);
        }
    }
    // Tidy only the spaces the removal left, keeping line breaks (code blocks).
    text.lines()
        .map(|l| {
            l.split(' ')
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// Convert a posted message; `None` for messages hermes never looks at (its own, system
/// messages, servers or members filtered out).
pub(crate) fn message(
    m: &DiscordMessage,
    me: u64,
    place: Place,
    bot_roles: &[u64],
    s: &DiscordSettings,
) -> Option<Message> {
    if m.author.id.get() == me || !matches!(m.kind, MessageType::Regular | MessageType::InlineReply)
    {
        return None;
    }
    let member_roles: Option<Vec<u64>> = m
        .member
        .as_ref()
        .map(|mb| mb.roles.iter().map(|r| r.get()).collect());
    if !heard(s, m.guild_id, member_roles.as_deref()) {
        tracing::debug!(guild = ?m.guild_id, user = m.author.id.get(), "ignoring a message from a server or member that is not allowed");
        return None;
    }
    let text = clean_text(m, me, bot_roles);
    let referenced_author = m.referenced_message.as_ref().map(|r| r.author.id.get());
    let replied_to_bot = referenced_author == Some(me);
    let mentioned = m.mentions.iter().any(|u| u.id.get() == me)
        || m.mention_roles.iter().any(|r| bot_roles.contains(&r.get()));
    let channel = m.channel_id.get();
    let parent = match place {
        Place::Thread { parent, .. } => Some(parent),
        _ => None,
    };
    let free = !s.require_mention
        || s.free_response_channels.contains(&channel)
        || parent.is_some_and(|p| s.free_response_channels.contains(&p));
    let own_thread = matches!(place, Place::Thread { owner: Some(o), .. } if o == me);
    let is_command = text.starts_with('/');
    let trigger = match place {
        Place::Direct if is_command => Trigger::Command,
        Place::Direct => Trigger::Direct,
        _ if !(mentioned || replied_to_bot || own_thread || free) => Trigger::Ambient,
        _ if is_command => Trigger::Command,
        _ if mentioned => Trigger::Mention,
        _ if replied_to_bot => Trigger::ReplyToBot,
        // Own thread or free-response channel: addressed without a mention.
        _ => Trigger::Mention,
    };
    let (chat, mut thread) = chat_of(m.channel_id, place);
    if s.auto_thread
        && place == Place::Channel
        && matches!(trigger, Trigger::Mention | Trigger::ReplyToBot)
    {
        // Answered in a thread started from this message: a thread's id is its starter's.
        thread = Some(m.id.get().to_string().into());
    }
    let nick = m.member.as_ref().and_then(|mb| mb.nick.as_deref());
    Some(Message {
        platform: Platform::Discord,
        id: m.id.get().to_string().into(),
        chat,
        thread,
        sender: sender_of(&m.author, nick),
        text,
        attachments: m
            .attachments
            .iter()
            .map(|a| Attachment {
                kind: attachment_kind(a.content_type.as_deref()),
                mime: a.content_type.clone(),
                name: Some(a.filename.clone()),
                size: Some(u64::from(a.size)),
                locator: a.url.clone(),
            })
            .collect(),
        reply_to: m.referenced_message.as_ref().map(|r| ReplyRef {
            id: r.id.get().to_string().into(),
            to_bot: r.author.id.get() == me,
            text: Some(r.content.clone()).filter(|t| !t.is_empty()),
        }),
        sent_at: snowflake_time(m.id.get()),
        subject: None,
        topic: None,
        trigger,
    })
}

/// Convert a button press on one of the bot's messages.
pub(crate) fn button(
    i: &ComponentInteraction,
    place: Place,
    s: &DiscordSettings,
) -> Option<Message> {
    let roles: Option<Vec<u64>> = i
        .member
        .as_ref()
        .map(|mb| mb.roles.iter().map(|r| r.get()).collect());
    if !heard(s, i.guild_id, roles.as_deref()) {
        return None;
    }
    let data = i.data.custom_id.clone();
    let (chat, thread) = chat_of(i.channel_id, place);
    let nick = i.member.as_ref().and_then(|mb| mb.nick.as_deref());
    Some(Message {
        platform: Platform::Discord,
        // Interaction ids are unique, so a replayed press is recognised.
        id: format!("ia:{}", i.id.get()).into(),
        chat,
        thread,
        sender: sender_of(&i.user, nick),
        text: data.clone(),
        attachments: Vec::new(),
        reply_to: Some(ReplyRef {
            id: i.message.id.get().to_string().into(),
            to_bot: true,
            text: Some(i.message.content.clone()).filter(|t| !t.is_empty()),
        }),
        sent_at: snowflake_time(i.id.get()),
        subject: None,
        topic: None,
        trigger: Trigger::Button { data },
    })
}

#[cfg(test)]
mod tests;
