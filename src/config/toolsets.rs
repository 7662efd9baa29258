//! The toolset names users write in `[tools] toolsets` and `[tools.platforms]`: which built-in
//! tools each one enables. The agent's toolbox registers exactly these tools (a test there says
//! so).

/// Named groups of tools that configuration enables per platform.
pub const TOOLSETS: &[(&str, &[&str])] = &[
    ("core", &["current_time", "todo", "clarify"]),
    ("memory", &["memory", "session_search"]),
    ("skills", &["skills_list", "skill_view", "skill_manage"]),
    (
        "files",
        &[
            "read_file",
            "write_file",
            "patch_file",
            "search_files",
            "list_dir",
            "send_file",
        ],
    ),
    ("terminal", &["terminal"]),
    ("web", &["web_fetch"]),
    ("delegate", &["delegate_task"]),
    ("cron", &["cronjob"]),
];

/// Whether `name` is a built-in tool.
pub fn is_builtin(name: &str) -> bool {
    TOOLSETS.iter().any(|(_, tools)| tools.contains(&name))
}

/// The tool names enabled by `toolsets`.
pub fn tools_in(toolsets: &[String]) -> Vec<&'static str> {
    TOOLSETS
        .iter()
        .filter(|(name, _)| toolsets.iter().any(|s| s == name))
        .flat_map(|(_, tools)| tools.iter().copied())
        .collect()
}
