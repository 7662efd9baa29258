//! Tests of the three skill tools, through their `Tool` interface.

mod manage;
mod read;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{SkillManage, SkillView, SkillsList};
use crate::skills::testing::sources;
use crate::store::Store;
use crate::tools::{Tool, ToolContext, ToolError};

pub(super) struct Setup {
    pub(super) _dir: tempfile::TempDir,
    pub(super) user: PathBuf,
    pub(super) store: Store,
    pub(super) manage: SkillManage,
    pub(super) view: SkillView,
    pub(super) list: SkillsList,
}

pub(super) fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("skills");
    let store = Store::open_in_memory().unwrap();
    Setup {
        manage: SkillManage::new(sources(&user), store.clone()),
        view: SkillView::new(sources(&user), store.clone()),
        list: SkillsList::new(sources(&user), store.clone()),
        _dir: dir,
        user,
        store,
    }
}

pub(super) async fn call(tool: &dyn Tool, args: Value) -> Result<String, ToolError> {
    tool.call(args, &ToolContext::for_tests()).await
}

/// Every file below `dir`, relative, with its content: what "nothing changed" compares.
pub(super) fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                out.push((rel, String::new()));
                pending.push(p);
            } else {
                out.push((rel, fs::read_to_string(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}
