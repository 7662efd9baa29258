//! Writing what was mapped: keys into `config.toml` (its comments and layout kept, by
//! toml_edit) and secrets into `hermes.env`, each file replaced atomically with mode 0600. A key
//! or variable the user already set is kept as it is.

use std::io::Write;
use std::path::Path;

use super::mapping::{Setting, TomlValue};

/// What happened to one key or variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Added.
    Added,
    /// Already set to the same value.
    Same,
    /// Already set to something else: kept.
    Kept,
}

/// `[section] key = value` for each setting not yet in `text` (a TOML document), with the
/// outcome of each; `None` when nothing changes.
pub(super) fn merge_toml(
    text: &str,
    settings: &[Setting],
) -> Result<(Option<String>, Vec<Outcome>), String> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| format!("is not valid TOML ({e}); fix it before importing"))?;
    let mut outcomes = Vec::new();
    let mut changed = false;
    for s in settings {
        let table = section(&mut doc, s.section)?;
        let value = to_item(&s.value);
        match table.get(s.key) {
            Some(existing) if existing.to_string().trim() == value.to_string().trim() => {
                outcomes.push(Outcome::Same)
            }
            Some(existing) if !is_empty(existing) => outcomes.push(Outcome::Kept),
            _ => {
                table.insert(s.key, value);
                outcomes.push(Outcome::Added);
                changed = true;
            }
        }
    }
    Ok((changed.then(|| doc.to_string()), outcomes))
}

fn is_empty(item: &toml_edit::Item) -> bool {
    match item.as_value() {
        Some(toml_edit::Value::String(s)) => s.value().is_empty(),
        Some(toml_edit::Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

/// The `[name]` table of `doc`, created when missing; an error when `name` is not a table.
pub(in crate::cli) fn section<'d>(
    doc: &'d mut toml_edit::DocumentMut,
    name: &str,
) -> Result<&'d mut toml_edit::Table, String> {
    doc.entry(name)
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_mut()
        .ok_or_else(|| format!("`{name}` is not a table"))
}

/// `v` as a `config.toml` item.
pub(in crate::cli) fn to_item(v: &TomlValue) -> toml_edit::Item {
    match v {
        TomlValue::Text(s) => toml_edit::value(s.as_str()),
        TomlValue::Bool(b) => toml_edit::value(*b),
        TomlValue::List(items) => toml_edit::value(
            items
                .iter()
                .map(String::as_str)
                .collect::<toml_edit::Array>(),
        ),
    }
}

/// `KEY=value` lines for each secret not yet set in `text` (a dotenv file), with the outcome of
/// each; `None` when nothing changes.
pub(super) fn merge_env(
    text: &str,
    secrets: &[(String, String)],
) -> (Option<String>, Vec<Outcome>) {
    let existing = super::mapping::parse_env(text);
    let mut out = text.to_owned();
    let mut outcomes = Vec::new();
    let mut changed = false;
    for (name, value) in secrets {
        match existing.get(name) {
            Some(v) if v == value => outcomes.push(Outcome::Same),
            Some(v) if !v.is_empty() => outcomes.push(Outcome::Kept),
            _ => {
                if !changed {
                    if !out.is_empty() && !out.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push_str("# Imported from hermes-agent (`hermes import hermes-agent`).\n");
                }
                out.push_str(&format!("{name}={}\n", quote(value)));
                outcomes.push(Outcome::Added);
                changed = true;
            }
        }
    }
    (changed.then_some(out), outcomes)
}

/// `value` as an environment file's value (one place writes and reads them: `config`).
pub(in crate::cli) use crate::config::quote_env_value as quote;

/// Replace `path` with `text`, readable by its owner only (0600), atomically.
pub(in crate::cli) fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.import.{}.tmp", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_keys_are_added_and_the_users_own_are_kept() {
        let text = "# my config\n[llm]\nmodel = \"mine\"\n";
        let settings = vec![
            Setting {
                section: "llm",
                key: "model",
                value: TomlValue::Text("theirs".into()),
            },
            Setting {
                section: "telegram",
                key: "allowed_users",
                value: TomlValue::List(vec!["111".into()]),
            },
        ];
        let (new, outcomes) = merge_toml(text, &settings).unwrap();
        let new = new.unwrap();
        assert_eq!(outcomes, [Outcome::Kept, Outcome::Added]);
        assert!(
            new.starts_with("# my config\n[llm]\nmodel = \"mine\"\n"),
            "{new}"
        );
        assert!(
            new.contains("[telegram]\nallowed_users = [\"111\"]"),
            "{new}"
        );
        // Again: nothing to change.
        let (again, outcomes) = merge_toml(&new, &settings).unwrap();
        assert_eq!(again, None);
        assert_eq!(outcomes, [Outcome::Kept, Outcome::Same]);
    }

    #[test]
    fn env_secrets_are_appended_quoted_and_never_replace_the_users() {
        let secrets = vec![
            ("TELEGRAM_BOT_TOKEN".to_owned(), "1:abc".to_owned()),
            ("EMAIL_PASSWORD".to_owned(), "it's $ecret".to_owned()),
            ("OPENAI_API_KEY".to_owned(), "sk-new".to_owned()),
        ];
        let (text, outcomes) = merge_env("OPENAI_API_KEY=sk-mine", &secrets);
        let text = text.unwrap();
        assert_eq!(outcomes, [Outcome::Added, Outcome::Added, Outcome::Kept]);
        assert!(
            text.starts_with("OPENAI_API_KEY=sk-mine\n# Imported"),
            "{text}"
        );
        assert!(text.contains("TELEGRAM_BOT_TOKEN=1:abc\n"), "{text}");
        assert!(
            text.contains("EMAIL_PASSWORD='it'\\''s $ecret'\n"),
            "{text}"
        );
        let (again, _) = merge_env(&text, &secrets[..1]);
        assert_eq!(again, None);
    }

    #[test]
    fn private_files_are_written_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hermes.env");
        write_private(&path, "A=1\n").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "A=1\n");
    }
}
