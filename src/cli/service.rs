//! `hermes gateway install [--user]` / `uninstall`: write the systemd unit (and, for the system
//! service, its user and directories), enable and start it — printing every step.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Subcommand;

use super::Outcome;

/// The unit files, as shipped in `systemd/`.
pub const SYSTEM_UNIT: &str = include_str!("../../systemd/hermes.service");
pub const USER_UNIT: &str = include_str!("../../systemd/hermes-user.service");
const SYSUSERS: &str = include_str!("../../systemd/hermes.sysusers.conf");
const TMPFILES: &str = include_str!("../../systemd/hermes.tmpfiles.conf");
/// Where the shipped units expect the binary.
const SHIPPED_PATH: &str = "/usr/local/bin/hermes";

#[derive(Debug, Clone, Subcommand)]
pub enum ServiceAction {
    /// Install hermes as a systemd service and start it.
    Install {
        /// A user service (~/.config/systemd/user) instead of a system one.
        #[arg(long)]
        user: bool,
        /// Print what would be written and run, and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Write and enable the unit, but do not start it now.
        #[arg(long)]
        no_start: bool,
    },
    /// Stop and disable the service and remove its unit (state and configuration are kept).
    Uninstall {
        #[arg(long)]
        user: bool,
        #[arg(long)]
        dry_run: bool,
    },
    /// Print the unit file `install` would write.
    Unit {
        #[arg(long)]
        user: bool,
        /// The template unit `hermes@.service` instead: several processes of one deployment on
        /// this host (`systemctl enable --now hermes@1 hermes@2`), on a shared PostgreSQL store.
        #[arg(long, conflicts_with = "user")]
        template: bool,
    },
}

/// One step of an installation.
enum Step {
    Write(PathBuf, String),
    Remove(PathBuf),
    Run(Vec<String>),
}

impl Step {
    fn describe(&self) -> String {
        match self {
            Step::Write(p, _) => format!("write {}", p.display()),
            Step::Remove(p) => format!("remove {}", p.display()),
            Step::Run(args) => format!("run: {}", args.join(" ")),
        }
    }

    fn perform(&self) -> Outcome {
        match self {
            Step::Write(path, text) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                }
                std::fs::write(path, text)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))
            }
            Step::Remove(path) => match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(format!("cannot remove {}: {e}", path.display()))
                }
                _ => Ok(()),
            },
            Step::Run(args) => {
                let status = Command::new(&args[0])
                    .args(&args[1..])
                    .status()
                    .map_err(|e| format!("cannot run {}: {e}", args[0]))?;
                if status.success() {
                    Ok(())
                } else {
                    Err(format!("`{}` failed ({status})", args.join(" ")))
                }
            }
        }
    }
}

pub(super) fn service(action: ServiceAction) -> Outcome {
    let (steps, dry_run) = match action {
        ServiceAction::Unit { user, template } => {
            let unit = unit_text(user, &binary()?);
            return super::emit(&if template { template_unit(&unit) } else { unit });
        }
        ServiceAction::Install {
            user,
            dry_run,
            no_start,
        } => (
            install_steps(user, no_start, &binary()?, &home_dir())?,
            dry_run,
        ),
        ServiceAction::Uninstall { user, dry_run } => {
            (uninstall_steps(user, &home_dir())?, dry_run)
        }
    };
    for step in &steps {
        println!("{}{}", if dry_run { "would " } else { "" }, step.describe());
        if let (true, Step::Write(_, text)) = (dry_run, step) {
            for line in text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
            {
                println!("    {line}");
            }
        }
        if !dry_run {
            step.perform()?;
        }
    }
    Ok(())
}

/// This binary's path, which the unit will run.
fn binary() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    exe.to_str()
        .map(str::to_owned)
        .ok_or_else(|| "the binary's path is not UTF-8".into())
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from)
}

/// The unit for `binary`.
pub fn unit_text(user: bool, binary: &str) -> String {
    let shipped = if user { USER_UNIT } else { SYSTEM_UNIT };
    shipped.replace(SHIPPED_PATH, binary)
}

/// The system unit as the template `hermes@.service`: instance `%i` is one process of a
/// deployment on a shared store, reading `/etc/hermes/hermes-%i.env` after the common
/// environment for what must differ per process on one host (its admin and webhook ports).
pub fn template_unit(system_unit: &str) -> String {
    let head = "# hermes as several processes of one deployment on this host, on a shared PostgreSQL store\n\
# (HERMES_DATABASE_URL in /etc/hermes/hermes.env). Install as /etc/systemd/system/hermes@.service,\n\
# then `systemctl enable --now hermes@1 hermes@2 hermes@3`. Each instance reads\n\
# /etc/hermes/hermes-<instance>.env after hermes.env: give each its own HERMES_ADMIN_LISTEN\n\
# (127.0.0.1:8701, 127.0.0.1:8702, …) and, in Telegram webhook mode, TELEGRAM_WEBHOOK_LISTEN\n\
# (the load balancer's upstreams). State in /var/lib/hermes (memory files, skills) is shared.\n";
    let body: String = system_unit
        .lines()
        .skip_while(|l| l.starts_with('#') || l.is_empty())
        .map(|l| {
            if l.starts_with("Description=") {
                "Description=hermes AI agent gateway, process %i of a deployment on a shared store"
                    .to_owned()
            } else if l == "EnvironmentFile=-/etc/hermes/hermes.env" {
                format!("{l}\nEnvironmentFile=-/etc/hermes/hermes-%i.env")
            } else {
                l.to_owned()
            }
        })
        .map(|l| l + "\n")
        .collect();
    format!("{head}\n{body}")
}

fn systemctl(user: bool, args: &[&str]) -> Step {
    let mut all = vec!["systemctl".to_owned()];
    if user {
        all.push("--user".into());
    }
    all.extend(args.iter().map(|s| s.to_string()));
    Step::Run(all)
}

fn unit_path(user: bool, home: &Path) -> PathBuf {
    if user {
        home.join(".config/systemd/user/hermes.service")
    } else {
        PathBuf::from("/etc/systemd/system/hermes.service")
    }
}

fn install_steps(
    user: bool,
    no_start: bool,
    binary: &str,
    home: &Path,
) -> Result<Vec<Step>, String> {
    if !user && !running_as_root() {
        return Err("installing the system service needs root (use sudo), or install a user service with --user".into());
    }
    let mut steps = Vec::new();
    if !user {
        steps.push(Step::Write(
            "/etc/sysusers.d/hermes.conf".into(),
            SYSUSERS.into(),
        ));
        steps.push(Step::Write(
            "/etc/tmpfiles.d/hermes.conf".into(),
            TMPFILES.into(),
        ));
        steps.push(Step::Run(vec![
            "systemd-sysusers".into(),
            "/etc/sysusers.d/hermes.conf".into(),
        ]));
        steps.push(Step::Run(vec![
            "systemd-tmpfiles".into(),
            "--create".into(),
            "/etc/tmpfiles.d/hermes.conf".into(),
        ]));
    }
    steps.push(Step::Write(unit_path(user, home), unit_text(user, binary)));
    steps.push(systemctl(user, &["daemon-reload"]));
    if no_start {
        steps.push(systemctl(user, &["enable", "hermes.service"]));
    } else {
        steps.push(systemctl(user, &["enable", "--now", "hermes.service"]));
    }
    Ok(steps)
}

fn uninstall_steps(user: bool, home: &Path) -> Result<Vec<Step>, String> {
    if !user && !running_as_root() {
        return Err("removing the system service needs root (use sudo)".into());
    }
    Ok(vec![
        systemctl(user, &["disable", "--now", "hermes.service"]),
        Step::Remove(unit_path(user, home)),
        systemctl(user, &["daemon-reload"]),
    ])
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_run_the_installed_binary() {
        let unit = unit_text(false, "/opt/hermes/bin/hermes");
        assert!(
            unit.contains(
                "ExecStart=/opt/hermes/bin/hermes --config /etc/hermes/config.toml gateway"
            )
        );
        assert!(!unit.contains(SHIPPED_PATH));
        assert!(unit_text(true, "/x/hermes").contains("ExecStart=/x/hermes gateway"));
    }

    #[test]
    fn user_install_writes_the_unit_under_home_then_enables_it() {
        let steps = install_steps(true, false, "/x/hermes", Path::new("/home/ann")).unwrap();
        let described: Vec<String> = steps.iter().map(Step::describe).collect();
        assert_eq!(
            described,
            [
                "write /home/ann/.config/systemd/user/hermes.service",
                "run: systemctl --user daemon-reload",
                "run: systemctl --user enable --now hermes.service",
            ]
        );
    }
}
