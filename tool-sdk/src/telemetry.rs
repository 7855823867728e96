//! Traces of the agent's work, in OpenTelemetry's terms.
//!
//! The agent emits [`tracing`] spans named and filled after OpenTelemetry's [semantic
//! conventions for generative AI](https://opentelemetry.io/docs/specs/semconv/gen-ai/):
//!
//! | span (kind) | for | attributes |
//! |---|---|---|
//! | `invoke_agent {gen_ai.agent.name}` (internal) | one run: [`prompt`], [`run`], [`continue_run`]; a sub-agent's run is a child of the Task call that started it | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.agent.name` (when [named]), `gen_ai.agent.id` (`main`, `task-N`), `gen_ai.conversation.id` (the session), `gen_ai.request.model`, `gen_ai.usage.input_tokens` and `output_tokens` (the run's totals) |
//! | `chat {gen_ai.request.model}` (client) | one model turn | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.request.max_tokens`, `gen_ai.request.temperature`, `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens` (cached ones included), `output_tokens`, `cache_read.input_tokens`, `cache_creation.input_tokens` |
//! | `execute_tool {gen_ai.tool.name}` (internal) | one tool call, a child of its run even when read-only calls run together | `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type` |
//! | `tools/call {gen_ai.tool.name}` (client) | one call of an MCP server's tool, a child of the call's `execute_tool` | `mcp.method.name`, `gen_ai.operation.name`, `gen_ai.tool.name`, `mcp.server.name` (the server's name in the config) |
//! | `tools/call {gen_ai.tool.name}` (server) | one call our MCP server ran | `mcp.method.name`, `gen_ai.operation.name`, `gen_ai.tool.name`, `jsonrpc.request.id` |
//!
//! MCP calls carry [W3C trace context](https://www.w3.org/TR/trace-context/) in the request's
//! `_meta` (`traceparent`, `tracestate`), as the protocol's SEP-414 has it: with the `otel`
//! feature, our client sends its `tools/call` span's, and our server makes the span of a call
//! whose request carries one a child of it, so the two processes' spans are one trace.
//!
//! A span that failed has the status error, with the message, and `error.type`: for a tool
//! call the [`ToolErrorKind`] in snake case (`timeout`,
//! `permission_denied`...) or `tool_error` for a tool that returned an error result; for a
//! model call or a run, `rate_limited`, `overloaded`, the HTTP status of other provider
//! errors, `transport`, `stream`, `cancelled`, `max_turns`...
//!
//! Any `tracing` subscriber sees these spans; the `otel.name`, `otel.kind` and
//! `otel.status_*` fields are how [tracing-opentelemetry] names the OpenTelemetry span, and
//! sets its kind and status. With the `otel` feature of tool-sdk, `init_otlp` sends the spans
//! to an OpenTelemetry collector (OTLP over HTTP/protobuf, as to port 4318); `otlp_layer`
//! gives the layer alone, to add to a subscriber of one's own.
//!
//! [`prompt`]: crate::agent::Agent::prompt
//! [`run`]: crate::agent::Agent::run
//! [`continue_run`]: crate::agent::Agent::continue_run
//! [named]: crate::agent::AgentConfig::with_name
//! [tracing-opentelemetry]: https://docs.rs/tracing-opentelemetry

use tracing::Span;

use crate::{ToolError, ToolErrorKind, ToolOutput};

#[cfg(feature = "otel")]
pub use otlp::{OtlpGuard, TelemetryError, init_otlp, otlp_layer};

/// Why a tool call failed, if it did, on its span (the agent's `execute_tool`, or an MCP
/// `tools/call` on either side): the pipeline's error, or an error result of the tool.
pub(crate) fn end_tool(span: &Span, error: Option<&ToolError>, output: &ToolOutput) {
    if span.is_disabled() {
        return;
    }
    match error {
        Some(error) => failed(span, tool_error_type(error.kind()), &error.to_string()),
        None if output.is_error => failed(span, "tool_error", &output.to_text()),
        None => {}
    }
}

/// [`end_tool`] for a tool's own result (an MCP server's tool, at the client).
#[cfg(feature = "mcp-client")]
pub(crate) fn end_tool_result(span: &Span, result: &crate::ToolResult) {
    match result {
        Ok(output) => end_tool(span, None, output),
        Err(error) if !span.is_disabled() => {
            failed(span, tool_error_type(error.kind()), &error.to_string());
        }
        Err(_) => {}
    }
}

/// Marks `span` failed: the status error with `message`, and `error.type` (the span declares
/// the three fields, empty).
pub(crate) fn failed(span: &Span, error_type: &str, message: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
    span.record("otel.status_description", message);
}

fn tool_error_type(kind: ToolErrorKind) -> &'static str {
    match kind {
        ToolErrorKind::InvalidInput => "invalid_input",
        ToolErrorKind::NotFound => "not_found",
        ToolErrorKind::PermissionDenied => "permission_denied",
        ToolErrorKind::Timeout => "timeout",
        ToolErrorKind::Cancelled => "cancelled",
        ToolErrorKind::ExecutionFailed => "execution_failed",
        ToolErrorKind::Retry => "retry",
        // Non-exhaustive (defined in tool-sdk-core): a kind added later.
        _ => "other",
    }
}

/// The W3C `traceparent` and `tracestate` of `span`, when it is an OpenTelemetry span (the
/// `otel` layer is installed) with a valid context.
#[cfg(feature = "otel")]
pub(crate) fn trace_context(span: &tracing::Span) -> Option<(String, Option<String>)> {
    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    let context = span.context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut fields = std::collections::HashMap::new();
    opentelemetry_sdk::propagation::TraceContextPropagator::new()
        .inject_context(&context, &mut fields);
    let parent = fields.remove("traceparent")?;
    Some((
        parent,
        fields.remove("tracestate").filter(|s| !s.is_empty()),
    ))
}

/// Makes `span` a child of the remote span a W3C `traceparent` (and `tracestate`) names; a
/// malformed `traceparent` is ignored, as the W3C specification asks, and `span` stays where
/// it was.
#[cfg(feature = "otel")]
pub(crate) fn set_remote_parent(span: &tracing::Span, traceparent: &str, tracestate: Option<&str>) {
    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    let mut fields = std::collections::HashMap::new();
    fields.insert("traceparent".to_owned(), traceparent.to_owned());
    if let Some(state) = tracestate {
        fields.insert("tracestate".to_owned(), state.to_owned());
    }
    let remote = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&fields);
    if remote.span().span_context().is_valid() {
        // Fails only when the span is not an OpenTelemetry one: nothing to join then.
        let _ = span.set_parent(remote);
    } else {
        tracing::debug!(
            traceparent,
            "a malformed traceparent in an MCP request was ignored"
        );
    }
}

#[cfg(feature = "otel")]
mod otlp {
    use opentelemetry::InstrumentationScope;
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::Layer;
    use tracing_subscriber::registry::LookupSpan;

    /// Why spans cannot be sent.
    #[derive(Debug, thiserror::Error)]
    #[non_exhaustive]
    pub enum TelemetryError {
        /// The collector's address is not an `http://` or `https://` URL.
        #[error(
            "the OTLP endpoint `{endpoint}` cannot be used: {reason} (give the collector's \
             OTLP/HTTP address, such as http://localhost:4318)"
        )]
        Endpoint {
            /// The address as given.
            endpoint: String,
            /// What is wrong with it.
            reason: String,
        },
        /// The exporter could not be built.
        #[error("the OTLP exporter could not be built: {0}")]
        Exporter(#[source] crate::error::ErrorSource),
        /// [`init_otlp`] found a global subscriber already set.
        #[error(
            "a global tracing subscriber is already set: add `otlp_layer(...)` to it instead \
             of calling `init_otlp`"
        )]
        SubscriberAlreadySet,
        /// Spans could not be sent on [`OtlpGuard::flush`].
        #[error("the spans could not be sent: {0}")]
        Flush(#[source] crate::error::ErrorSource),
    }

    /// Keeps the exporter alive; dropping it sends the spans not yet sent and shuts the
    /// exporter down. Keep it until the end of `main`.
    ///
    /// Flushing blocks the thread until the collector answers (at most the exporter's
    /// timeout, 10 seconds): a collector served by the same single-threaded runtime would
    /// only answer after that.
    #[must_use = "dropping the guard shuts the exporter down: keep it until the end of main"]
    #[derive(Debug)]
    pub struct OtlpGuard {
        provider: SdkTracerProvider,
    }

    impl OtlpGuard {
        /// Sends the spans ended so far, waiting for the collector.
        pub fn flush(&self) -> Result<(), TelemetryError> {
            self.provider
                .force_flush()
                .map_err(|error| TelemetryError::Flush(crate::error::source(error)))
        }
    }

    impl Drop for OtlpGuard {
        fn drop(&mut self) {
            // Nowhere to report a failure to: the process is ending.
            let _ = self.provider.shutdown();
        }
    }

    /// A [`tracing_subscriber`] layer sending spans to the OpenTelemetry collector at
    /// `endpoint` (OTLP over HTTP/protobuf), as the service `service_name`; and the guard
    /// that flushes them when dropped. `endpoint` is the collector's address, such as
    /// `http://localhost:4318` (spans go to its `/v1/traces`), or a full URL with a path,
    /// used as is.
    ///
    /// ```no_run
    /// use tracing_subscriber::layer::SubscriberExt;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (layer, _guard) = tool_sdk::telemetry::otlp_layer("http://localhost:4318", "my-agent")?;
    /// tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))?;
    /// // ... run agents; the spans are sent in batches, the rest when `_guard` is dropped.
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// A bad address is an error, not a panic:
    ///
    /// ```
    /// # use tracing_subscriber::Registry;
    /// let result = tool_sdk::telemetry::otlp_layer::<Registry>("localhost:4318", "x");
    /// let error = result.err().expect("no scheme: refused");
    /// assert!(error.to_string().contains("http"), "{error}");
    /// ```
    pub fn otlp_layer<S>(
        endpoint: &str,
        service_name: &str,
    ) -> Result<(impl Layer<S>, OtlpGuard), TelemetryError>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let url = traces_url(endpoint)?;
        tool_sdk_core::tls::ensure_provider();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .build()
            .map_err(|error| TelemetryError::Exporter(crate::error::source(error)))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name(service_name.to_owned())
                    .build(),
            )
            .build();
        let tracer = provider.tracer_with_scope(
            InstrumentationScope::builder("tool-sdk")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        );
        let layer = tracing_opentelemetry::layer().with_tracer(tracer);
        Ok((layer, OtlpGuard { provider }))
    }

    /// Sends every span of the process to the collector at `endpoint` (see [`otlp_layer`]):
    /// sets the global `tracing` subscriber. Fails if one is set already.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let _guard = tool_sdk::telemetry::init_otlp("http://localhost:4318", "my-agent")?;
    /// // ... run agents: each run is a trace of its model calls and tool calls.
    /// # Ok(())
    /// # }
    /// ```
    pub fn init_otlp(endpoint: &str, service_name: &str) -> Result<OtlpGuard, TelemetryError> {
        use tracing_subscriber::layer::SubscriberExt;

        let (layer, guard) = otlp_layer(endpoint, service_name)?;
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .map_err(|_| TelemetryError::SubscriberAlreadySet)?;
        Ok(guard)
    }

    /// The URL spans are posted to: `endpoint`, plus `/v1/traces` when it has no path.
    fn traces_url(endpoint: &str) -> Result<String, TelemetryError> {
        let bad = |reason: String| TelemetryError::Endpoint {
            endpoint: endpoint.to_owned(),
            reason,
        };
        let mut url = reqwest::Url::parse(endpoint.trim()).map_err(|e| bad(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!(
                "the scheme is `{}`, not http or https",
                url.scheme()
            )));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("there is no host".into()));
        }
        if url.path() == "/" {
            url.set_path("/v1/traces");
        }
        Ok(url.into())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn an_address_without_a_path_gets_the_traces_path() {
            assert_eq!(
                traces_url("http://localhost:4318").unwrap(),
                "http://localhost:4318/v1/traces"
            );
            assert_eq!(
                traces_url("https://otel.example.com/").unwrap(),
                "https://otel.example.com/v1/traces"
            );
            assert_eq!(
                traces_url("http://127.0.0.1:9/custom/traces").unwrap(),
                "http://127.0.0.1:9/custom/traces"
            );
        }

        #[test]
        fn a_bad_address_says_why() {
            for (endpoint, why) in [
                ("", "relative URL"),
                ("localhost:4318", "not http or https"),
                ("grpc://localhost:4317", "not http or https"),
                ("http://", "empty host"),
            ] {
                let error = traces_url(endpoint).unwrap_err().to_string();
                assert!(error.contains(why), "{endpoint}: {error}");
                assert!(error.contains("http://localhost:4318"), "{error}");
            }
        }
    }
}
