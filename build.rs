//! Rebuild when the bundled skills change: `include_dir!` embeds the `skills/` folder, but the
//! compiler only tracks the files that existed at the previous build, so a new skill or file
//! would otherwise go unnoticed until something else changed.

fn main() {
    println!("cargo::rerun-if-changed=skills");
}
