//! Markdown to Telegram HTML (interim: escapes only; replaced by the full renderer).

pub fn to_telegram_html(markdown: &str) -> String {
    markdown
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
