//! `hermes setup --non-interactive`: the same answers from flags (secrets also from their
//! usual environment variables), verified the same way; anything refused ends setup with a
//! non-zero exit and the platform's reason, never the secret.

use hermes_adapter::Platform;

use super::files::{self, Targets};
use super::plan::{Creds, Llm, Plan, split_list};
use super::verify::{self, Verified};
use super::{Failure, SetupArgs, start_hint};
use crate::config::{EnvSource, ProcessEnv, ProviderKind};

pub(super) async fn run(
    plan: &mut Plan,
    args: &SetupArgs,
    targets: &Targets,
) -> Result<(), Failure> {
    let existing = targets.existing();
    if !existing.is_empty() && !args.force {
        let names: Vec<String> = existing.iter().map(|p| p.display().to_string()).collect();
        return Err(Failure::usage(format!(
            "{} already exist(s); add --force to update (the keys given are replaced, the rest is kept, and a copy of each file is saved beside it)",
            names.join(" and ")
        )));
    }
    let creds = credentials(args)?;
    if creds.is_empty() {
        return Err(Failure::usage(
            "no platform given: add --telegram-token (or TELEGRAM_BOT_TOKEN), --discord-token, \
             --slack-bot-token with --slack-app-token, --email-address with --email-password, \
             or --matrix-user-id with --matrix-homeserver and --matrix-password"
                .into(),
        ));
    }
    for c in creds {
        let platform = c.platform();
        plan.set_creds(c);
        match verify::platform(plan, platform).await {
            Verified::Ok(about) => println!("✓ {}: {about}", platform.title()),
            Verified::NotBuiltIn(why) => eprintln!("hermes setup: {}: {why}", platform.title()),
            Verified::Failed(why) => {
                return Err(Failure::failed(format!(
                    "{} did not accept the credentials: {why}",
                    platform.title()
                )));
            }
        }
    }
    allowlists(plan, args)?;
    let llm = provider(plan, args).await?;
    println!("✓ model: {} at {}", llm.model, llm.base_url);
    plan.set_llm(llm);
    let written = files::write(targets, plan).map_err(Failure::failed)?;
    for b in &written.backups {
        println!("previous file kept as {}", b.display());
    }
    println!(
        "✓ wrote {} and {} (mode 0600)",
        targets.config.display(),
        targets.env.display()
    );
    println!("{}", start_hint(targets));
    Ok(())
}

fn credentials(args: &SetupArgs) -> Result<Vec<Creds>, Failure> {
    let secret = |flag: &Option<String>| flag.as_deref().map(verify::secret);
    let mut out = Vec::new();
    if let Some(token) = secret(&args.telegram_token) {
        out.push(Creds::Telegram { token });
    }
    if let Some(token) = secret(&args.discord_token) {
        out.push(Creds::Discord { token });
    }
    match (secret(&args.slack_bot_token), secret(&args.slack_app_token)) {
        (Some(bot_token), Some(app_token)) => out.push(Creds::Slack {
            bot_token,
            app_token,
        }),
        (None, None) => {}
        _ => {
            return Err(Failure::usage(
                "Slack needs both --slack-bot-token (xoxb-…) and --slack-app-token (xapp-…, Socket Mode)".into(),
            ));
        }
    }
    if let Some(address) = &args.email_address {
        let domain = address.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
        let password = secret(&args.email_password).ok_or_else(|| {
            Failure::usage("--email-address needs --email-password (or EMAIL_PASSWORD)".into())
        })?;
        out.push(Creds::Email {
            address: address.clone(),
            password,
            imap_host: args
                .email_imap_host
                .clone()
                .unwrap_or(format!("imap.{domain}")),
            smtp_host: args
                .email_smtp_host
                .clone()
                .unwrap_or(format!("smtp.{domain}")),
            authserv_ids: args.email_authserv_id.clone(),
        });
    }
    if let Some(user_id) = &args.matrix_user_id {
        let (Some(homeserver), Some(password)) = (
            args.matrix_homeserver.clone(),
            secret(&args.matrix_password),
        ) else {
            return Err(Failure::usage(
                "--matrix-user-id needs --matrix-homeserver and --matrix-password (or MATRIX_PASSWORD)".into(),
            ));
        };
        out.push(Creds::Matrix {
            homeserver,
            user_id: user_id.clone(),
            password,
        });
    }
    Ok(out)
}

/// `--allow PLATFORM:ID` (or a bare id when one platform is set up), `--allow-all`,
/// `--pairing`.
fn allowlists(plan: &mut Plan, args: &SetupArgs) -> Result<(), Failure> {
    let platforms = plan.platforms();
    let mut per: Vec<(Platform, Vec<String>)> = Vec::new();
    for entry in args.allow.iter().flat_map(|a| split_list(a)) {
        let named = entry
            .split_once(':')
            .and_then(|(p, id)| Some((platforms.iter().find(|x| x.as_str() == p)?, id)));
        let (platform, id) = match (named, platforms.as_slice()) {
            (Some((p, id)), _) => (*p, id.to_owned()),
            (None, [only]) => (*only, entry.clone()),
            (None, _) => {
                return Err(Failure::usage(format!(
                    "--allow {entry}: say which platform, e.g. --allow telegram:{entry}"
                )));
            }
        };
        match per.iter_mut().find(|(p, _)| *p == platform) {
            Some((_, ids)) => ids.push(id),
            None => per.push((platform, vec![id])),
        }
    }
    for (platform, ids) in per {
        plan.set_allowed(platform, ids).map_err(Failure::usage)?;
    }
    if args.allow_all {
        plan.set_allow_all();
    }
    if args.pairing {
        plan.set_pairing();
    }
    let config = &plan.config;
    for p in platforms {
        let allowed = config
            .platform(p)
            .is_some_and(|s| !s.allowed_users().is_empty());
        if !allowed && !args.allow_all && !args.pairing {
            eprintln!(
                "hermes setup: nobody is allowed on {} yet (add --allow {}:ID, --pairing or --allow-all)",
                p.title(),
                p.as_str()
            );
        }
    }
    Ok(())
}

/// The provider from `--provider`, `--base-url`, `--api-key` (or its variable) and `--model`,
/// verified by listing its models.
async fn provider(plan: &Plan, args: &SetupArgs) -> Result<Llm, Failure> {
    let current = &plan.config.llm;
    let kind = match args.provider.as_deref() {
        None => current.provider,
        Some("openai") => ProviderKind::Openai,
        Some("anthropic") => ProviderKind::Anthropic,
        Some(other) => {
            return Err(Failure::usage(format!(
                "--provider {other}: expected `openai` (any OpenAI-compatible API) or `anthropic`"
            )));
        }
    };
    let same = kind == current.provider;
    let base_url = match &args.base_url {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None if same => current.base_url.clone(),
        None => kind.default_base_url().to_owned(),
    };
    let variable = verify::key_variable(kind);
    let api_key = match (&args.api_key, same) {
        (Some(k), _) => verify::secret(k),
        (None, true) if !current.api_key.is_empty() => current.api_key.clone(),
        _ => ProcessEnv
            .var(variable)
            .map(|k| verify::secret(&k))
            .unwrap_or_default(),
    };
    if api_key.is_empty() && !verify::key_may_be_empty(&base_url) {
        return Err(Failure::usage(format!(
            "no API key for {base_url}: add --api-key (or set {variable})"
        )));
    }
    let mut llm = Llm {
        kind,
        base_url,
        api_key,
        model: String::new(),
    };
    let models = verify::models(&plan.config, &llm).await.map_err(|e| {
        Failure::failed(format!(
            "the model provider at {} did not accept the key: {e}",
            llm.base_url
        ))
    })?;
    let shown = || {
        models
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    };
    llm.model = match &args.model {
        Some(m) if models.is_empty() || models.contains(m) => m.clone(),
        Some(m) => {
            return Err(Failure::failed(format!(
                "model `{m}` is not among those {} offers this key: {}",
                llm.base_url,
                shown()
            )));
        }
        None => {
            return Err(Failure::usage(format!(
                "add --model NAME{}",
                if models.is_empty() {
                    String::new()
                } else {
                    format!(" (offered: {})", shown())
                }
            )));
        }
    };
    Ok(llm)
}
