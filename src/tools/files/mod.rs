//! The file tools: read, write, patch, search and list files inside the caller's workspace, and
//! send one to the user.
//!
//! Each call works in the workspace [`Workspaces`] gives its session (one per person, one per
//! shared session). Every tool takes paths relative to that [`Workspace`]'s root and resolves them through
//! [`Workspace::resolve`], which refuses anything that would leave the root (`..`, absolute paths
//! elsewhere, symbolic links pointing out). All file system work runs on tokio's blocking pool so
//! that a slow disk never stalls the runtime, and every refusal says what to do instead, because
//! the reader of these errors is the model.
//!
//! ```no_run
//! use std::path::Path;
//! use std::sync::Arc;
//!
//! use hermes::tools::ToolRegistry;
//! use hermes::tools::files::{Workspaces, file_tools};
//!
//! let workspaces = Arc::new(Workspaces::new(Path::new("/var/lib/hermes/workspace"))?);
//! let mut registry = ToolRegistry::new();
//! for tool in file_tools(workspaces) {
//!     registry.register(tool);
//! }
//! # Ok::<(), std::io::Error>(())
//! ```

pub(crate) mod disk;
mod list_dir;
mod notes_search;
mod patch_file;
mod read_file;
mod search_files;
mod send_file;
mod walk;
mod workspace;
mod workspaces;
mod write_file;

use std::sync::Arc;

pub use disk::{Disk, Kind, Meta, Remote, human_size};
pub use list_dir::ListDir;
pub use notes_search::NotesSearch;
pub use patch_file::PatchFile;
pub use read_file::ReadFile;
pub use search_files::SearchFiles;
pub use send_file::SendFile;
pub use workspace::{Intent, Workspace};
pub use workspaces::{Workspaces, escape as escape_name};
pub use write_file::WriteFile;

use super::Tool;

/// All file tools, each call working in its session's workspace, in a stable order: reading
/// tools first.
pub fn file_tools(workspace: Arc<Workspaces>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFile::new(workspace.clone())),
        Arc::new(ListDir::new(workspace.clone())),
        Arc::new(SearchFiles::new(workspace.clone())),
        Arc::new(SendFile::new(workspace.clone())),
        Arc::new(WriteFile::new(workspace.clone())),
        Arc::new(PatchFile::new(workspace)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Category;

    #[test]
    fn file_tools_have_distinct_names_and_object_schemas() {
        let dir = tempfile::tempdir().unwrap();
        let tools = file_tools(Arc::new(Workspaces::new(dir.path()).unwrap()));
        let names: Vec<_> = tools.iter().map(|t| t.spec().name).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "list_dir",
                "search_files",
                "send_file",
                "write_file",
                "patch_file"
            ]
        );
        for tool in &tools {
            let spec = tool.spec();
            assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
            assert!(spec.parameters.get("$schema").is_none());
            let writes = spec.category == Category::Write;
            assert_eq!(spec.parallel_safe, !writes, "{}", spec.name);
        }
    }
}
