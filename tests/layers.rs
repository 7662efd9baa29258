//! The module graph, read from the code's own `use` lines and `crate::…`/`super::…` paths: no
//! import circle between modules, and no import from a lower layer of the core to a higher one.
//!
//! Layers, bottom up (an arrow may only point to the same floor or below):
//! `conversation`, `config`, `policy`, `metrics`, `logging` → `store` → `llm` → `tools` →
//! `memory`, `skills`, `cron`, `mcp` → `agent` → `gateway`, `api` → `cli`.
//! Inside a crate, a file may use what its ancestors define (`super::Shared`); every other arrow
//! counts, and no two files may reach each other through them. Test code (`tests.rs`,
//! `*_tests.rs`, `#[cfg(test)] mod …`) is not part of the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The core's top-level modules and their floor.
const LAYERS: &[(&str, u8)] = &[
    ("conversation", 0),
    ("config", 0),
    ("policy", 0),
    ("metrics", 0),
    ("logging", 0),
    ("store", 1),
    ("llm", 2),
    ("tools", 3),
    ("memory", 4),
    ("skills", 4),
    ("cron", 4),
    ("mcp", 4),
    ("agent", 5),
    ("gateway", 6),
    ("api", 6),
    ("cli", 7),
];

/// One source file as a module path (`["gateway", "lanes", "lane"]`).
type ModPath = Vec<String>;

#[test]
fn the_core_layers_only_point_down_and_no_module_circles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let graph = Graph::read(&root.join("src"));
    let mut problems = graph.circles();
    let floor = |m: &str| LAYERS.iter().find(|(n, _)| *n == m).map(|(_, f)| *f);
    for (from, tos) in &graph.edges {
        let Some(a) = from.first() else { continue };
        for to in tos {
            let Some(b) = to.first() else { continue };
            if a == b {
                continue;
            }
            match (floor(a), floor(b)) {
                (Some(fa), Some(fb)) if fb > fa => problems.push(format!(
                    "upward import: {} (floor {fa}) uses {} (floor {fb})",
                    graph.file_of(from),
                    to.join("::")
                )),
                (None, _) | (_, None) => problems.push(format!(
                    "module `{}` has no floor: add it to LAYERS in tests/layers.rs",
                    if floor(a).is_none() { a } else { b }
                )),
                _ => {}
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_adapter_crate_has_a_module_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters");
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            problems.extend(Graph::read(&src).circles());
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reader_sees_the_arrows_it_must() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "//! a\nmod x;\nmod y;\nuse crate::{b::{self, Thing}};\n",
    )
    .unwrap();
    std::fs::write(src.join("a/x.rs"), "use super::y::Y;\nfn f() {}\n").unwrap();
    std::fs::write(
        src.join("a/y.rs"),
        "use super::Parent;\nfn g() { super::x::f() }\n#[cfg(test)]\nmod tests { use crate::b; }\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "// use crate::a;\nfn h() {}\n").unwrap();
    let g = Graph::read(src);
    let a: ModPath = vec!["a".into()];
    let b: ModPath = vec!["b".into()];
    let x: ModPath = vec!["a".into(), "x".into()];
    let y: ModPath = vec!["a".into(), "y".into()];
    assert!(g.edges[&a].contains(&b), "grouped use");
    assert!(g.edges[&x].contains(&y), "super::sibling");
    assert!(g.edges[&y].contains(&x), "inline path");
    assert!(!g.edges[&y].contains(&a), "ancestors do not count");
    assert!(!g.edges[&y].contains(&b), "test modules do not count");
    assert!(g.edges[&b].is_empty(), "comments do not count");
    let circles = g.circles();
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert!(circles[0].contains("a/x.rs") && circles[0].contains("a/y.rs"));
}

struct Graph {
    src: PathBuf,
    files: BTreeMap<ModPath, PathBuf>,
    edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

impl Graph {
    fn read(src: &Path) -> Graph {
        let mut files = BTreeMap::new();
        collect(src, src, &mut files);
        let mut edges = BTreeMap::new();
        for (module, file) in &files {
            let code = production_code(&std::fs::read_to_string(file).unwrap());
            let mut targets = BTreeSet::new();
            for path in referenced_paths(&code) {
                if let Some(target) = resolve(module, &path, &files)
                    && !module.starts_with(&target)
                {
                    targets.insert(target);
                }
            }
            edges.insert(module.clone(), targets);
        }
        Graph {
            src: src.to_owned(),
            files,
            edges,
        }
    }

    fn file_of(&self, m: &ModPath) -> String {
        self.files[m]
            .strip_prefix(&self.src)
            .unwrap_or(&self.files[m])
            .display()
            .to_string()
    }

    /// Every circle, as a readable line: at each folder, its parts (the files and sub-folders
    /// directly in it, each standing for everything inside) must not reach each other. A circle
    /// between two files anywhere shows up at the folder that holds both.
    fn circles(&self) -> Vec<String> {
        let folders: BTreeSet<ModPath> = self
            .files
            .keys()
            .filter(|m| !m.is_empty())
            .map(|m| m[..m.len() - 1].to_vec())
            .collect();
        let mut out = Vec::new();
        for folder in folders {
            let part = |m: &ModPath| {
                (m.len() > folder.len() && m.starts_with(&folder))
                    .then(|| m[..=folder.len()].to_vec())
            };
            let mut pairs = BTreeSet::new();
            let mut because: BTreeMap<(ModPath, ModPath), Vec<String>> = BTreeMap::new();
            for (from, tos) in &self.edges {
                let Some(a) = part(from) else { continue };
                for to in tos {
                    if let Some(b) = part(to)
                        && a != b
                    {
                        pairs.insert((a.clone(), b.clone()));
                        because.entry((a.clone(), b)).or_default().push(format!(
                            "{} uses {}",
                            self.file_of(from),
                            to.join("::")
                        ));
                    }
                }
            }
            for scc in sccs(&pairs) {
                let names: Vec<String> = scc.iter().map(|m| m.join("::")).collect();
                let reasons: Vec<String> = because
                    .iter()
                    .filter(|((a, b), _)| scc.contains(a) && scc.contains(b))
                    .flat_map(|(_, why)| why.iter().cloned())
                    .collect();
                out.push(format!(
                    "import circle in {} between {} ({})",
                    self.src.join(folder.join("/")).display(),
                    names.join(", "),
                    reasons.join("; ")
                ));
            }
        }
        out
    }
}

/// Source files under `dir` by module path (test files left out).
fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<ModPath, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" && name != "testdata" {
                collect(root, &path, out);
            }
            continue;
        }
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        if stem == "tests" || stem.ends_with("_tests") || stem == "testing" || stem == "main" {
            continue;
        }
        let rel = path.parent().unwrap().strip_prefix(root).unwrap();
        let mut module: ModPath = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if stem != "mod" && stem != "lib" {
            module.push(stem.to_owned());
        }
        out.insert(module, path);
    }
}

/// The code without comments and without test modules.
fn production_code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            // A test module: skip it (a declaration `mod tests;` or a block to its brace).
            let decl = lines.next().unwrap_or_default();
            if decl.contains('{') {
                let mut depth = brace_delta(decl);
                for l in lines.by_ref() {
                    depth += brace_delta(l);
                    if depth <= 0 {
                        break;
                    }
                }
            }
            continue;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

fn brace_delta(line: &str) -> i32 {
    line.chars()
        .map(|c| match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        })
        .sum()
}

/// Every path a file names: the leaves of its `use` trees and its inline `crate::`, `super::`
/// and `self::` paths.
fn referenced_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let use_re = regex::Regex::new(r"(?ms)^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);").unwrap();
    for cap in use_re.captures_iter(code) {
        for leaf in expand(&cap[1]) {
            out.push(split(&leaf));
        }
    }
    let inline = regex::Regex::new(r"\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    for m in inline.find_iter(code) {
        out.push(split(m.as_str()));
    }
    out
}

fn split(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The leaves of a `use` tree: `a::{b, c::{d as e}}` → `a::b`, `a::c::d`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let leaf = tree.split(" as ").next().unwrap_or(tree).trim();
        return vec![leaf.to_owned()];
    };
    let prefix = tree[..open].trim().trim_end_matches("::");
    let close = tree.rfind('}').filter(|c| *c > open).unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|leaf| {
            if prefix.is_empty() {
                leaf
            } else {
                format!("{prefix}::{leaf}")
            }
        })
        .collect()
}

/// The module a path points into (the longest known module prefix), if it is this crate's.
fn resolve(from: &ModPath, path: &[String], files: &BTreeMap<ModPath, PathBuf>) -> Option<ModPath> {
    // The module the path is relative to: this file's own module for `self::`, its parent's
    // for `super::` (a folder's `mod.rs` is the folder itself).
    let own: ModPath = from.clone();
    let parent = |m: &ModPath| -> ModPath { m[..m.len().saturating_sub(1)].to_vec() };
    let mut segments = path.iter().peekable();
    let mut base = match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
            ModPath::new()
        }
        Some("self") => {
            segments.next();
            own
        }
        Some("super") => {
            let mut m = own;
            while segments.peek().is_some_and(|s| *s == "super") {
                segments.next();
                m = parent(&m);
            }
            m
        }
        Some(first) => {
            // A bare path resolves against the file's own child modules (`mod lane;` then
            // `use lane::Lane`); anything else is another crate.
            let mut child = own.clone();
            child.push(first.to_string());
            if !files.contains_key(&child) {
                return None;
            }
            own
        }
        None => return None,
    };
    let mut found = files.contains_key(&base).then(|| base.clone());
    for s in segments {
        if s == "self" {
            break;
        }
        base.push(s.clone());
        if files.contains_key(&base) {
            found = Some(base.clone());
        } else {
            break;
        }
    }
    found
}

/// Strongly connected components with more than one member (Tarjan).
fn sccs<N: Ord + Clone>(edges: &BTreeSet<(N, N)>) -> Vec<Vec<N>> {
    let mut nodes: BTreeSet<N> = BTreeSet::new();
    let mut next: BTreeMap<N, Vec<N>> = BTreeMap::new();
    for (a, b) in edges {
        nodes.insert(a.clone());
        nodes.insert(b.clone());
        next.entry(a.clone()).or_default().push(b.clone());
    }
    struct State<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        counter: usize,
        out: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(v: &N, next: &BTreeMap<N, Vec<N>>, s: &mut State<N>) {
        s.index.insert(v.clone(), s.counter);
        s.low.insert(v.clone(), s.counter);
        s.counter += 1;
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        for w in next.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, next, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = w == *v;
                scc.push(w);
                if done {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.out.push(scc);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        counter: 0,
        out: Vec::new(),
    };
    for n in &nodes {
        if !s.index.contains_key(n) {
            visit(n, &next, &mut s);
        }
    }
    s.out
}
