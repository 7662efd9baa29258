//! Test support: fakes of the services hermes talks to, on 127.0.0.1, and a harness that runs
//! the real `hermes` binary against them.
#![allow(dead_code)]

pub mod daemon;
pub mod discord_api;
pub mod discord_world;
pub mod fake_discord;
pub mod fake_http;
pub mod fake_llm;
pub mod fake_slack;
pub mod fake_telegram;
pub mod llm_wire;
pub mod mail_world;
pub mod slack_api;
pub mod slack_world;
pub mod telegram_api;
pub mod telegram_html;
