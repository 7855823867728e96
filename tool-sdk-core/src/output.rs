//! What a call ends with: [`ToolOutput`] (content blocks for the model) or [`ToolError`].

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of a tool result. Non-exhaustive: MCP adds kinds of content (a match keeps a
/// `_` arm, which [`ContentBlock::readable`] serves well).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Its MIME type, such as `image/png`.
        media_type: String,
        /// The base64 of its bytes.
        data: String,
    },
    /// A link to a resource the client can read, not its contents (MCP's `resource_link`).
    /// Models get [`ContentBlock::readable`] text for it.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// What it is, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A resource's contents, embedded in the result (MCP's `resource`): text, or bytes as
    /// base64. Models get [`ContentBlock::readable`] text for it.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its contents.
        #[serde(flatten)]
        contents: ResourceContents,
    },
}

/// The contents of an embedded resource ([`ContentBlock::Resource`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// Bytes.
    Blob {
        /// The base64 of the bytes.
        blob: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// A link to the resource at `uri`, called `name`.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ContentBlock::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
        }
    }

    /// The text of the resource at `uri`, embedded.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: Option<String>,
        text: impl Into<String>,
    ) -> Self {
        ContentBlock::Resource {
            uri: uri.into(),
            mime_type,
            contents: ResourceContents::Text { text: text.into() },
        }
    }

    /// The bytes of the resource at `uri`, embedded (as base64).
    pub fn resource_blob(uri: impl Into<String>, mime_type: Option<String>, bytes: &[u8]) -> Self {
        use base64::Engine as _;
        ContentBlock::Resource {
            uri: uri.into(),
            mime_type,
            contents: ResourceContents::Blob {
                blob: base64::engine::general_purpose::STANDARD.encode(bytes),
            },
        }
    }

    /// What a model that has no block of this kind reads: the text of a text block, a line
    /// naming a resource link, an embedded text resource's URI and text, an embedded binary
    /// resource's URI and type; `None` for an image.
    pub fn readable(&self) -> Option<Cow<'_, str>> {
        match self {
            ContentBlock::Text { text } => Some(Cow::Borrowed(text)),
            ContentBlock::Image { .. } => None,
            ContentBlock::ResourceLink { uri, name, .. } => {
                Some(Cow::Owned(format!("[resource link {uri} ({name})]")))
            }
            ContentBlock::Resource {
                uri,
                contents: ResourceContents::Text { text },
                ..
            } => Some(Cow::Owned(format!("[resource {uri}]\n{text}"))),
            ContentBlock::Resource { uri, mime_type, .. } => Some(Cow::Owned(format!(
                "[binary resource {uri} ({})]",
                mime_type.as_deref().unwrap_or("unknown type")
            ))),
        }
    }

    /// An image block from raw bytes.
    pub fn image(media_type: impl Into<String>, bytes: &[u8]) -> Self {
        use base64::Engine as _;
        ContentBlock::Image {
            media_type: media_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }
}

/// The result of a call as the model will see it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The blocks sent back in the tool_result.
    pub content: Vec<ContentBlock>,
    /// The same result as JSON, when the tool returned a `Serialize` value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Whether this reports a failure the model should act on.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            ..Default::default()
        }
    }

    /// A JSON result: the model gets it as compact JSON text, the app as a value.
    pub fn json(value: Value) -> Self {
        let text = match &value {
            Value::String(s) => s.clone(),
            // Straight into a buffer: `Display` would go through the formatting machinery.
            other => serde_json::to_string(other).unwrap_or_default(),
        };
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            structured: Some(value),
            is_error: false,
        }
    }

    /// A result made of the given blocks.
    pub fn blocks(content: Vec<ContentBlock>) -> Self {
        ToolOutput {
            content,
            ..Default::default()
        }
    }

    /// An error result with this message.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(message)],
            structured: None,
            is_error: true,
        }
    }

    /// The blocks' [readable](ContentBlock::readable) text joined by newlines (images are
    /// left out).
    pub fn to_text(&self) -> Cow<'_, str> {
        let mut texts = self.content.iter().filter_map(ContentBlock::readable);
        match (texts.next(), texts.next()) {
            (None, _) => Cow::Borrowed(""),
            (Some(only), None) => only,
            (Some(first), Some(second)) => {
                let mut joined = format!("{first}\n{second}");
                for text in texts {
                    joined.push('\n');
                    joined.push_str(&text);
                }
                Cow::Owned(joined)
            }
        }
    }
}

impl From<ToolError> for ToolOutput {
    fn from(error: ToolError) -> Self {
        ToolOutput::error(error.message_for_model())
    }
}

/// Why a call failed. Every kind becomes an `is_error` tool_result the model can act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The input is not what the tool accepts; the message says what to change.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Something the input names does not exist (a file, a tool, a record).
    #[error("not found: {0}")]
    NotFound(String),
    /// The user, a rule or a hook refused the call.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The call ran out of time and was stopped.
    #[error("timed out after {}", humanize(*.0))]
    Timeout(Duration),
    /// The call was cancelled before it finished.
    #[error("cancelled")]
    Cancelled,
    /// The tool ran and failed.
    #[error("{0}")]
    ExecutionFailed(String),
    /// A transient failure: the model should call the tool again, maybe with another input.
    #[error("{0}")]
    Retry(String),
}

impl ToolError {
    /// An [`InvalidInput`](ToolError::InvalidInput) error.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        ToolError::InvalidInput(message.into())
    }

    /// A [`NotFound`](ToolError::NotFound) error.
    pub fn not_found(message: impl Into<String>) -> Self {
        ToolError::NotFound(message.into())
    }

    /// A [`PermissionDenied`](ToolError::PermissionDenied) error.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        ToolError::PermissionDenied(message.into())
    }

    /// An [`ExecutionFailed`](ToolError::ExecutionFailed) error.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::ExecutionFailed(message.into())
    }

    /// A [`Retry`](ToolError::Retry) error.
    pub fn retry(message: impl Into<String>) -> Self {
        ToolError::Retry(message.into())
    }

    /// The kind, without the message.
    pub fn kind(&self) -> ToolErrorKind {
        match self {
            ToolError::InvalidInput(_) => ToolErrorKind::InvalidInput,
            ToolError::NotFound(_) => ToolErrorKind::NotFound,
            ToolError::PermissionDenied(_) => ToolErrorKind::PermissionDenied,
            ToolError::Timeout(_) => ToolErrorKind::Timeout,
            ToolError::Cancelled => ToolErrorKind::Cancelled,
            ToolError::ExecutionFailed(_) => ToolErrorKind::ExecutionFailed,
            ToolError::Retry(_) => ToolErrorKind::Retry,
        }
    }

    /// The text of the error tool_result: the message plus what the model can do about it.
    pub fn message_for_model(&self) -> String {
        match self {
            ToolError::InvalidInput(message) => {
                format!("Invalid input: {message}\nFix the input and call the tool again.")
            }
            ToolError::Timeout(after) => format!(
                "The tool timed out after {} and was stopped. Try a smaller task or a longer \
                 timeout.",
                humanize(*after)
            ),
            ToolError::Cancelled => "The tool call was cancelled before it finished.".to_owned(),
            ToolError::Retry(message) => format!("{message}\nPlease try again."),
            ToolError::ExecutionFailed(message) => format!("Error: {message}"),
            other => {
                let mut text = other.to_string();
                if let Some(first) = text.get_mut(..1) {
                    first.make_ascii_uppercase();
                }
                text
            }
        }
    }
}

/// The kinds of [`ToolError`], for matching and statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// See [`ToolError::InvalidInput`].
    InvalidInput,
    /// See [`ToolError::NotFound`].
    NotFound,
    /// See [`ToolError::PermissionDenied`].
    PermissionDenied,
    /// See [`ToolError::Timeout`].
    Timeout,
    /// See [`ToolError::Cancelled`].
    Cancelled,
    /// See [`ToolError::ExecutionFailed`].
    ExecutionFailed,
    /// See [`ToolError::Retry`].
    Retry,
}

fn humanize(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        format!("{millis}ms")
    } else if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sessions store results as JSON: every kind of block comes back as it went.
    #[test]
    fn resource_blocks_round_trip_through_json() {
        let blocks = vec![
            ContentBlock::resource_link("file:///a.md", "a.md"),
            ContentBlock::resource_text("file:///b.md", Some("text/markdown".into()), "# b"),
            ContentBlock::resource_blob("file:///c", None, &[0, 255]),
        ];
        let json = serde_json::to_value(&blocks).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"type": "resource_link", "uri": "file:///a.md", "name": "a.md"},
                {"type": "resource", "uri": "file:///b.md", "mime_type": "text/markdown",
                    "text": "# b"},
                {"type": "resource", "uri": "file:///c", "blob": "AP8="},
            ])
        );
        let back: Vec<ContentBlock> = serde_json::from_value(json).unwrap();
        assert_eq!(back, blocks);
        let output = ToolOutput::blocks(back);
        assert_eq!(
            output.to_text(),
            "[resource link file:///a.md (a.md)]\n[resource file:///b.md]\n# b\n\
             [binary resource file:///c (unknown type)]"
        );
    }
}
