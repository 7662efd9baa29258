//! The agent's toolbox: every built-in tool, configured, in one registry. It sits above the
//! domains that own a tool (`tools/`, `memory/`, `skills/`, `cron/`), so none of them reaches up.

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::store::Store;
use crate::tools::{self, ToolRegistry};

/// The built-in tools, configured, and the terminal's sandbox they were built with (its owner
/// ends containers with their sessions). Which tools a turn may call is decided per platform by
/// the configured toolsets. Fails when the workspace directory cannot be created.
pub fn builtin(
    config: &Config,
    store: &Store,
    cron: &crate::cron::CronControl,
) -> std::io::Result<(ToolRegistry, tools::terminal::SandboxResolved)> {
    let workspace_dir = config.workspace();
    let workspaces = tools::files::Workspaces::new(&workspace_dir).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "cannot use the tools workspace {}: {e}",
                workspace_dir.display()
            ),
        )
    })?;
    let sandbox = tools::terminal::resolve_sandbox(&config.tools.sandbox, &config.home);
    // Over SSH the terminal's files are on the remote host, and so are the file tools'.
    let workspaces = match &sandbox {
        tools::terminal::SandboxResolved::Ssh(target) => {
            workspaces.on(Arc::new(tools::ssh::SftpFiles::new(target.clone())))
        }
        tools::terminal::SandboxResolved::Broken(why)
            if config.tools.sandbox.backend == crate::config::SandboxBackend::Ssh =>
        {
            workspaces.refusing(format!("the SSH host cannot be used: {why}"))
        }
        _ => workspaces,
    };
    // The person's notes, read through the same workspaces (same root, host and refusal) as the
    // file tools.
    let notes = tools::files::NotesSearch::new(Arc::new(workspaces.clone()));
    let mut r = ToolRegistry::new();
    r.register(Arc::new(tools::CurrentTime::default()));
    r.register(Arc::new(tools::Todo::new(store.settings())));
    r.register(Arc::new(tools::Clarify::new(Duration::from_secs(
        config.policy.clarify_timeout_secs,
    ))));
    r.register(Arc::new(crate::memory::MemoryTool::new(
        crate::memory::MemoryFiles::from_config(config),
    )));
    r.register(Arc::new(tools::SessionSearch::new(store.clone())));
    let skills = crate::skills::SkillSources::for_home(&config.home);
    let sets = config.clone();
    r.register(Arc::new(
        crate::skills::SkillsList::new(skills.clone(), store.clone()).with_availability(Arc::new(
            move |ctx: &tools::ToolContext| {
                let platform = ctx.session.platform;
                let toolsets = sets.toolsets(platform);
                crate::skills::Availability::new(
                    platform,
                    crate::config::tools_in(toolsets),
                    toolsets.iter(),
                )
            },
        )),
    ));
    r.register(Arc::new(crate::skills::SkillView::new(
        skills.clone(),
        store.clone(),
    )));
    r.register(Arc::new(crate::skills::SkillManage::new(
        skills,
        store.clone(),
    )));
    let workspaces = Arc::new(workspaces);
    r.register(Arc::new(tools::documents::ReadDocument::new(
        workspaces.clone(),
        config.documents.clone(),
    )));
    for tool in tools::files::file_tools(workspaces) {
        r.register(tool);
    }
    let mut terminal = tools::terminal::TerminalSettings::new(&workspace_dir);
    terminal.default_timeout = Duration::from_secs(config.tools.terminal_timeout_secs.max(1));
    // The terminal keeps the head and the tail of long output; stay within the agent's cap so
    // nothing cuts it again.
    terminal.max_output_bytes = config.agent.tool_output_max_chars.max(1024);
    terminal.hermes_home = Some(config.home.clone());
    terminal.fence = terminal_fence(config);
    terminal.sandbox = config.tools.sandbox.clone();
    r.register(Arc::new(tools::terminal::TerminalTool::with_sandbox(
        terminal,
        sandbox.clone(),
    )));
    r.register(Arc::new(tools::web_fetch::WebFetch::new(
        tools::web_fetch::WebFetchSettings {
            allow_private: config.tools.web_allow_private,
            ..tools::web_fetch::WebFetchSettings::default()
        },
    )));
    r.register(Arc::new(notes));
    r.register(Arc::new(tools::web_search::WebSearch::new(
        tools::web_search::WebSearchSettings::from_config(&config.tools.web_search),
    )));
    for tool in tools::finance::finance_tools(tools::finance::FinanceSettings::from_config(
        &config.tools.finance,
    )) {
        r.register(tool);
    }
    r.register(Arc::new(tools::DelegateTask::default()));
    let default_tz = config
        .agent
        .timezone
        .clone()
        .or_else(|| jiff::tz::TimeZone::system().iana_name().map(str::to_owned))
        .unwrap_or_else(|| "UTC".to_owned());
    r.register(Arc::new(crate::cron::CronTool::new(
        store.cron(),
        cron.clone(),
        default_tz,
        config.cron.max_jobs_per_owner,
    )));
    Ok((r, sandbox))
}

/// What the terminal's commands may not open: the state directory (but its skills, which
/// commands may read and run), the config file and the env file beside it. The terminal adds
/// the workspace root to these and lets each call into its own workspace.
pub fn terminal_fence(config: &Config) -> tools::terminal::FenceSettings {
    let mut private = vec![config.home.clone()];
    if let Some(source) = &config.source {
        private.push(source.clone());
        if let Some(dir) = source.parent() {
            // Where the systemd units keep the tokens (`EnvironmentFile=`).
            private.push(dir.join("hermes.env"));
        }
    }
    tools::terminal::FenceSettings {
        private,
        shared: vec![config.home.join("skills")],
        writable: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_toolsets_name_exactly_the_registered_tools() {
        let home = tempfile::tempdir().unwrap();
        let config = Config {
            home: home.path().to_owned(),
            ..Config::default()
        };
        let store = Store::open_in_memory().unwrap();
        let (registry, _) = builtin(&config, &store, &crate::cron::CronControl::default()).unwrap();
        let mut registered: Vec<&str> = registry.names();
        registered.sort_unstable();
        let mut named: Vec<&str> = crate::config::TOOLSETS
            .iter()
            .flat_map(|(_, tools)| tools.iter().copied())
            .collect();
        named.sort_unstable();
        assert_eq!(registered, named);
    }
}
