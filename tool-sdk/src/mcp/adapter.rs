//! One tool of an MCP server, adapted as a [`Tool`]: its schemas lowered, its annotations
//! kept, its results (text, images, resources, structured content) turned into a
//! [`ToolOutput`].

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolResult;
use serde_json::Value;
use tracing::Instrument;

use super::client::ClientInner;
use crate::schema::{self, Provider};
use crate::tool::{
    BoxFuture, ContentBlock, ResourceContents, Tool, ToolAnnotations, ToolContext, ToolOutput,
    ToolResult,
};
use crate::validate::{InputValidator, ValidationOptions};

/// One tool of an MCP server.
pub(super) struct McpTool {
    client: Arc<ClientInner>,
    name: String,
    pub(super) server_name: String,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    /// Compiled once; `None` when the server declares no output schema or one that does not
    /// compile (its results are then passed on unchecked).
    output_validator: Option<InputValidator>,
    annotations: ToolAnnotations,
}

impl McpTool {
    pub(super) fn new(client: &Arc<ClientInner>, name: &str, tool: &rmcp::model::Tool) -> Self {
        let input_schema =
            schema::lower(&Value::Object((*tool.input_schema).clone()), Provider::Mcp);
        let output_schema = tool
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone()));
        let output_validator = output_schema.as_ref().and_then(|s| {
            InputValidator::new(s, ValidationOptions { coerce: false })
                .inspect_err(|error| {
                    tracing::warn!(
                        server = %client.name, tool = %tool.name, %error,
                        "the output schema of an MCP tool does not compile; its results are \
                         not checked"
                    );
                })
                .ok()
        });
        let hints = tool.annotations.clone().unwrap_or_default();
        let annotations = ToolAnnotations {
            title: tool.title.clone().or(hints.title),
            read_only: hints.read_only_hint,
            destructive: hints.destructive_hint,
            idempotent: hints.idempotent_hint,
            open_world: hints.open_world_hint,
        };
        let description = tool
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(str::to_owned)
            .or_else(|| annotations.title.clone())
            .unwrap_or_else(|| {
                format!("The `{}` tool of MCP server `{}`.", tool.name, client.name)
            });
        McpTool {
            client: client.clone(),
            name: name.to_owned(),
            server_name: tool.name.to_string(),
            description,
            input_schema,
            output_schema,
            output_validator,
            annotations,
        }
    }

    pub(super) fn output(&self, result: CallToolResult) -> ToolOutput {
        let is_error = result.is_error == Some(true);
        let mut content = Vec::with_capacity(result.content.len());
        for block in &result.content {
            let block = serde_json::to_value(block).unwrap_or_default();
            let text = |t: &str| ContentBlock::text(t);
            match block["type"].as_str() {
                Some("text") => content.push(text(block["text"].as_str().unwrap_or_default())),
                Some("image") => content.push(ContentBlock::Image {
                    media_type: block["mimeType"].as_str().unwrap_or("image/png").to_owned(),
                    data: block["data"].as_str().unwrap_or_default().to_owned(),
                }),
                // Kept as resources; models read them through `ContentBlock::readable`.
                Some("resource") => {
                    let resource = &block["resource"];
                    let uri = resource["uri"].as_str().unwrap_or_default().to_owned();
                    let mime_type = resource["mimeType"].as_str().map(str::to_owned);
                    let contents = match (resource["text"].as_str(), resource["blob"].as_str()) {
                        (Some(text), _) => ResourceContents::Text {
                            text: text.to_owned(),
                        },
                        (None, blob) => ResourceContents::Blob {
                            blob: blob.unwrap_or_default().to_owned(),
                        },
                    };
                    content.push(ContentBlock::Resource {
                        uri,
                        mime_type,
                        contents,
                    });
                }
                Some("resource_link") => {
                    let field = |key: &str| block[key].as_str().map(str::to_owned);
                    content.push(ContentBlock::ResourceLink {
                        uri: field("uri").unwrap_or_default(),
                        name: field("name").unwrap_or_default(),
                        description: field("description"),
                        mime_type: field("mimeType"),
                    });
                }
                Some("audio") => content.push(text(&format!(
                    "[audio ({}), not shown]",
                    block["mimeType"].as_str().unwrap_or("unknown type")
                ))),
                _ => content.push(text(&block.to_string())),
            }
        }
        let structured = result.structured_content;
        if content.is_empty()
            && let Some(value) = &structured
        {
            content.push(ContentBlock::text(value.to_string()));
        }
        // An error result's structured content is not held to the output schema.
        if !is_error && let Some(validator) = &self.output_validator {
            let mismatch = match &structured {
                None => {
                    Some("it declares an output schema but sent no structured content".to_owned())
                }
                Some(value) if !validator.is_valid(value) => validator
                    .check(value.clone())
                    .err()
                    .map(|errors| format!("its structured content does not match:\n{errors}")),
                Some(_) => None,
            };
            if let Some(mismatch) = mismatch {
                return ToolOutput::error(format!(
                    "MCP server `{}`: the output of its tool `{}` does not match the output \
                     schema the server declared: {mismatch}",
                    self.client.name, self.server_name
                ));
            }
        }
        ToolOutput {
            content,
            structured,
            is_error,
        }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    fn annotations(&self) -> ToolAnnotations {
        self.annotations.clone()
    }

    fn timeout(&self) -> Option<Duration> {
        self.client.config.tool_timeout
    }

    fn category(&self) -> Option<&str> {
        Some("mcp")
    }

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            // Made on the first poll, so that its parent is the span the call runs in.
            let span = tracing::info_span!(
                "tools/call",
                otel.name = format!("tools/call {}", self.server_name).as_str(),
                otel.kind = "client",
                mcp.method.name = "tools/call",
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = self.server_name.as_str(),
                mcp.server.name = self.client.name.as_str(),
                otel.status_code = tracing::field::Empty,
                otel.status_description = tracing::field::Empty,
                error.type = tracing::field::Empty,
            );
            let result = self
                .client
                .call(self, input, ctx)
                .instrument(span.clone())
                .await;
            crate::telemetry::end_tool_result(&span, &result);
            result
        })
    }

    fn display_title(&self, _input: &Value) -> String {
        match &self.annotations.title {
            Some(title) => format!("{title} ({})", self.client.name),
            None => format!("{} ({})", self.server_name, self.client.name),
        }
    }
}
