//! `hermes pairing`: the operator's side of DM pairing (`access.pairing = true`): list the
//! waiting codes and the approved people, approve a code, revoke a person. Works beside a
//! running daemon (it reads the same store and sees an approval at the person's next message).

use std::process::ExitCode;

use clap::Subcommand;
use hermes_adapter::Platform;

use super::{Outcome, emit, exit_code};
use crate::config::Config;
use crate::gateway::intake::pairing;

#[derive(Debug, Subcommand)]
pub enum PairingAction {
    /// The codes waiting for approval and the people approved.
    List,
    /// Approve the person who was given `code` on `platform` (e.g. `telegram K7M2QX9P`).
    Approve { platform: Platform, code: String },
    /// Stop serving a paired person (`platform user-id`, as `list` shows them).
    Revoke { platform: Platform, user: String },
}

pub(super) async fn pairing(config: Config, action: PairingAction) -> ExitCode {
    let store = match super::open_store(&config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    let settings = store.settings();
    let outcome: Outcome = match action {
        PairingAction::List => list(&*settings).await,
        PairingAction::Approve { platform, code } => {
            match pairing::approve(&*settings, platform, &code).await {
                Ok(Ok(p)) => emit(&format!(
                    "approved {} ({platform}:{}): they are served from their next message\n",
                    p.name, p.user
                )),
                Ok(Err(why)) => Err(why),
                Err(e) => Err(e.to_string()),
            }
        }
        PairingAction::Revoke { platform, user } => {
            match pairing::revoke(&*settings, platform, &user).await {
                Ok(true) => emit(&format!("revoked {platform}:{user}\n")),
                Ok(false) => Err(format!("{platform}:{user} was not paired")),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    if !config.access.pairing {
        eprintln!("note: access.pairing is off: strangers are not offered codes");
    }
    exit_code(outcome)
}

async fn list(settings: &dyn crate::store::Settings) -> Outcome {
    let pending = pairing::pending(settings)
        .await
        .map_err(|e| e.to_string())?;
    let approved = pairing::approved(settings)
        .await
        .map_err(|e| e.to_string())?;
    let now = hermes_adapter::now_millis();
    let mut out = String::from("waiting:\n");
    if pending.is_empty() {
        out.push_str("  (none)\n");
    }
    for (_, p) in &pending {
        out.push_str(&format!(
            "  {}:{}  {}  expires in {} min\n",
            p.platform,
            p.user,
            p.name,
            ((p.expires_at - now).max(0) as u64).div_ceil(60_000)
        ));
    }
    out.push_str("approved:\n");
    if approved.is_empty() {
        out.push_str("  (none)\n");
    }
    for (who, a) in &approved {
        out.push_str(&format!("  {who}  {}\n", a.name));
    }
    emit(&out)
}
