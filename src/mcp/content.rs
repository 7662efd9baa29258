//! What an MCP tool's result becomes for the model: its text, embedded text resources, a note
//! for each image, sound or binary resource (their bytes do not fit a tool result), and the
//! server's `isError` as an error.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The text of `result`, or the error text when the server flagged it as one.
pub fn text_of(result: CallToolResult) -> Result<String, String> {
    let mut parts: Vec<String> = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text),
            ContentBlock::Image(i) => parts.push(format!(
                "[an image ({}, {}) the tool returned; it cannot be shown here]",
                i.mime_type,
                size_of_base64(&i.data)
            )),
            ContentBlock::Audio(a) => parts.push(format!(
                "[a sound ({}, {}) the tool returned; it cannot be played here]",
                a.mime_type,
                size_of_base64(&a.data)
            )),
            ContentBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    parts.push(format!("[resource {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => parts.push(format!(
                    "[resource {uri}: {} of {}]",
                    size_of_base64(&blob),
                    mime_type.as_deref().unwrap_or("binary data")
                )),
                _ => parts.push("[a resource of a kind hermes does not read]".into()),
            },
            ContentBlock::ResourceLink(link) => parts.push(format!(
                "[resource link {}: {}{}]",
                link.uri,
                link.name,
                link.description
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )),
            // A block of a newer protocol than this build knows.
            _ => parts.push("[content of a kind hermes does not read]".into()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        Err(if text.trim().is_empty() {
            "the tool reported an error without saying which".into()
        } else {
            text
        })
    } else {
        Ok(text)
    }
}

/// The decoded size of base64 data, for people.
fn size_of_base64(data: &str) -> String {
    let bytes = data.trim_end_matches('=').len() * 3 / 4;
    crate::tools::files::human_size(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(content: Vec<ContentBlock>, is_error: bool) -> CallToolResult {
        let mut r = if is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        r.is_error = Some(is_error);
        r
    }

    #[test]
    fn text_resources_and_notes_reach_the_model() {
        let out = text_of(result(
            vec![
                ContentBlock::text("first"),
                ContentBlock::image("aGVsbG8=", "image/png"),
                ContentBlock::embedded_text("file:///a.txt", "inside"),
            ],
            false,
        ))
        .unwrap();
        assert_eq!(
            out,
            "first\n[an image (image/png, 5 B) the tool returned; it cannot be shown here]\n\
             [resource file:///a.txt]\ninside"
        );
        let err = text_of(result(vec![ContentBlock::text("no such city")], true)).unwrap_err();
        assert_eq!(err, "no such city");
    }
}
