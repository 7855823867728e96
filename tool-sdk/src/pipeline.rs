//! The road every tool call takes, whoever makes it: the agent's loop, [`ToolRegistry::call`]
//! and the MCP server all run calls through [`run_call`], each with its own [`CallPolicy`].
//!
//! 1. **resolve**: the registry finds the tool (an unknown name gets the closest names first);
//! 2. **parse**: arguments that are not a JSON object get the schema back;
//! 3. **validate**: the compiled schema, coercion, every problem listed AJV-style;
//! 4. **the tool's own check** ([`Tool::validate_input`]);
//! 5. **permission**: the policy's [`PermissionGate`], if any (none: every call runs);
//! 6. **run**: within the timeout (the tool's, capped by the policy's maximum), stopped by
//!    the context's cancellation token (after half a second to wind down on its own), a
//!    panic caught and turned into an error;
//! 7. **output check**: structured output against the tool's output schema (debug builds, or
//!    [`CallPolicy::with_output_check`]);
//! 8. **post hooks** see the result;
//! 9. **size cap**: the whole result, error or not, text and images, is cut to the policy's
//!    budget;
//! 10. **result**: one [`CallOutcome`], statistics recorded.
//!
//! Every call into tool code (its metadata too) is contained: a panic anywhere becomes an
//! `is_error` result, never a dead run or server.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::Value;

use crate::model::ToolInput;
use crate::permission::{PermissionGate, PermissionHandler, PostToolUse};
use crate::registry::{Entry, ToolRegistry};
use crate::tool::{ContentBlock, ResourceContents, Tool, ToolContext, ToolError, ToolOutput};

/// How long a cancelled call may go on to finish on its own before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_millis(500);

/// How one caller runs calls: limits, the permission gate, hooks.
#[derive(Clone)]
pub struct CallPolicy {
    default_timeout: Duration,
    max_timeout: Duration,
    max_result_chars: usize,
    max_result_image_bytes: usize,
    gate: Option<Arc<PermissionGate>>,
    post_hooks: Vec<Arc<dyn PostToolUse>>,
    check_output: bool,
}

impl std::fmt::Debug for CallPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallPolicy")
            .field("default_timeout", &self.default_timeout)
            .field("max_timeout", &self.max_timeout)
            .field("max_result_chars", &self.max_result_chars)
            .field("max_result_image_bytes", &self.max_result_image_bytes)
            .field("gate", &self.gate)
            .field("post_hooks", &self.post_hooks.len())
            .field("check_output", &self.check_output)
            .finish()
    }
}

impl Default for CallPolicy {
    /// Two minutes for tools that set no timeout, ten at most, no size cap (results come back
    /// whole, as the tool made them), no permission gate. An agent caps results with
    /// `Limits::max_result_chars`.
    fn default() -> Self {
        CallPolicy {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            max_result_chars: usize::MAX,
            max_result_image_bytes: usize::MAX,
            gate: None,
            post_hooks: Vec::new(),
            check_output: cfg!(debug_assertions),
        }
    }
}

impl CallPolicy {
    /// The default policy.
    pub fn new() -> Self {
        Self::default()
    }

    /// The timeout of a tool that sets none, and the longest any call may run.
    pub fn with_timeouts(mut self, default: Duration, max: Duration) -> Self {
        self.default_timeout = default;
        self.max_timeout = max;
        self
    }

    /// The most characters of text a result keeps (head and tail), error or not.
    pub fn with_max_result_chars(mut self, chars: usize) -> Self {
        self.max_result_chars = chars;
        self
    }

    /// The most bytes of (base64) image data a result keeps; images past it become a note.
    pub fn with_max_result_image_bytes(mut self, bytes: usize) -> Self {
        self.max_result_image_bytes = bytes;
        self
    }

    /// Calls pass this gate before they run.
    pub fn with_permission_gate(mut self, gate: Arc<PermissionGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Adds a hook that sees every result.
    pub fn with_post_hook(mut self, hook: Arc<dyn PostToolUse>) -> Self {
        self.post_hooks.push(hook);
        self
    }

    /// Whether a successful call of a tool that declares an output schema
    /// ([`Tool::output_schema`], such as a `#[tool]` returning [`Json<T>`](crate::Json)) must
    /// return structured output that matches it; a mismatch is an error result naming the tool
    /// and every problem. On by default in debug builds (so in tests), off in release builds.
    pub fn with_output_check(mut self, check: bool) -> Self {
        self.check_output = check;
        self
    }

    /// How long a call of a tool that sets no timeout may run.
    pub fn default_timeout(&self) -> Duration {
        self.default_timeout
    }

    /// How long a call of `tool` may run.
    pub fn timeout_for(&self, tool: &dyn Tool) -> Duration {
        contain(|| tool.timeout())
            .ok()
            .flatten()
            .unwrap_or(self.default_timeout)
            .min(self.max_timeout)
    }
}

/// The arguments of one call as the model sent them.
#[derive(Clone, Copy, Debug)]
pub enum RawInput<'a> {
    /// Parsed JSON.
    Json(&'a Value),
    /// Text that did not parse as a JSON object.
    Malformed {
        /// The model's text, verbatim.
        raw: &'a str,
        /// Why it is not a JSON object.
        error: &'a str,
    },
}

impl<'a> From<&'a ToolInput> for RawInput<'a> {
    fn from(input: &'a ToolInput) -> Self {
        match input {
            ToolInput::Parsed(value) => RawInput::Json(value),
            ToolInput::Malformed { raw, error } => RawInput::Malformed { raw, error },
        }
    }
}

/// How one call ended.
#[derive(Clone, Debug)]
pub struct CallOutcome<'a> {
    /// What the model gets: capped, `is_error` set for failures.
    pub output: ToolOutput,
    /// Why the call failed before or while running (`None` when the tool returned, even an
    /// `is_error` output); its message is capped like the output.
    pub error: Option<ToolError>,
    /// The input it ran with (after coercion and hooks), or as sent when it did not get that
    /// far. Borrowed from the caller's input while nothing changed it: the tool gets the only
    /// copy.
    pub input: Cow<'a, Value>,
    /// Whether the tool's `call` started.
    pub started: bool,
    /// Time from the start of the pipeline to the result.
    pub duration: Duration,
}

/// Runs one call down the road (see the [module docs](self)).
///
/// `ask` answers permission questions; `None` refuses calls that would ask, naming the rule
/// that would allow them.
pub async fn run_call<'a>(
    registry: &ToolRegistry,
    name: &str,
    input: RawInput<'a>,
    ctx: &ToolContext,
    policy: &CallPolicy,
    ask: Option<&dyn PermissionHandler>,
) -> CallOutcome<'a> {
    let (value, malformed) = match input {
        RawInput::Json(value) => (Cow::Borrowed(value), None),
        RawInput::Malformed { raw, error } => (
            Cow::Owned(Value::String(raw.to_owned())),
            Some((raw, error)),
        ),
    };
    let travel = Travel {
        registry,
        name,
        malformed,
        ctx,
        policy,
        ask,
        keep_input: true,
    };
    travel.run(value).await
}

/// One call's way down the road, and what it needs besides the input.
struct Travel<'r> {
    registry: &'r ToolRegistry,
    name: &'r str,
    /// The model's text and why it is not a JSON object, when it is not.
    malformed: Option<(&'r str, &'r str)>,
    ctx: &'r ToolContext,
    policy: &'r CallPolicy,
    ask: Option<&'r dyn PermissionHandler>,
    /// Whether the outcome must carry the input the tool ran with. When it need not (and no
    /// post hook looks at it), the tool is handed the input itself, not a copy.
    keep_input: bool,
}

impl Travel<'_> {
    async fn run<'a>(self, input: Cow<'a, Value>) -> CallOutcome<'a> {
        let Travel {
            registry,
            name,
            malformed,
            ctx,
            policy,
            ask,
            keep_input,
        } = self;
        let began = Instant::now();
        let mut road = Road {
            input,
            started: false,
            entry: None,
            keep_input: keep_input || !policy.post_hooks.is_empty(),
        };
        let travelled = AssertUnwindSafe(road.travel(registry, name, malformed, ctx, policy, ask))
            .catch_unwind()
            .await;
        let result = match travelled {
            Ok(result) => result,
            Err(panic) => Err(ToolError::failed(format!(
                "the tool panicked: {}",
                panic_message(panic.as_ref())
            ))),
        };
        let duration = began.elapsed();
        let failed = result.as_ref().map_or(true, |output| output.is_error);
        if let Some(entry) = &road.entry {
            entry.record(duration, failed);
        }
        let (output, error) = match result {
            Ok(output) => (cap(output, policy), None),
            Err(error) => {
                let error = cap_error(error, policy.max_result_chars);
                let mut output = ToolOutput::from(error.clone());
                if matches!(error, ToolError::Cancelled) && !road.started {
                    output = ToolOutput::error(
                        "The call was cancelled before it started; it did not run.",
                    );
                }
                (output, Some(error))
            }
        };
        CallOutcome {
            output,
            error,
            input: road.input,
            started: road.started,
            duration,
        }
    }
}

/// What a call carries along the road, kept when a stage fails or panics.
struct Road<'a> {
    input: Cow<'a, Value>,
    started: bool,
    /// The tool, its validator and statistics, once resolved (looked up once per call).
    entry: Option<Arc<Entry>>,
    /// Whether `input` is still needed once the tool has it.
    keep_input: bool,
}

impl Road<'_> {
    async fn travel(
        &mut self,
        registry: &ToolRegistry,
        name: &str,
        malformed: Option<(&str, &str)>,
        ctx: &ToolContext,
        policy: &CallPolicy,
        ask: Option<&dyn PermissionHandler>,
    ) -> Result<ToolOutput, ToolError> {
        let cancel = ctx.cancellation();
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let entry = &**self.entry.insert(registry.entry(name)?);
        let tool = entry.tool.as_ref();
        if let Some((raw, error)) = malformed {
            let shown: String = raw.chars().take(500).collect();
            return Err(ToolError::invalid_input(format!(
                "the arguments are {error}: {shown}\nSend a JSON object that matches \
                 this schema: {}",
                tool.input_schema()
            )));
        }
        if !entry.is_valid(&self.input) {
            // Coerced into a copy, or refused with every problem listed (the input stays as
            // sent).
            self.input = Cow::Owned(entry.validate(self.input.clone().into_owned())?);
        }
        tool.validate_input(&self.input, ctx).await?;

        if let Some(gate) = &policy.gate {
            let revalidate = |rewritten: Value| -> crate::BoxFuture<'_, Result<Value, ToolError>> {
                Box::pin(async move {
                    let input = entry.validate(rewritten)?;
                    tool.validate_input(&input, ctx).await?;
                    Ok(input)
                })
            };
            // The check first: one that needs no wait ends before the token is looked at
            // (polling it first would register a waiter on it, for nothing).
            tokio::select! {
                biased;
                checked = gate.check(tool, &mut self.input, ctx, &revalidate, ask) => checked?,
                _ = cancel.cancelled() => return Err(ToolError::Cancelled),
            }
        }

        let limit = policy.timeout_for(tool);
        self.started = true;
        // Dropping the call's future on timeout or cancellation stops the tool; commands it
        // started with `ctx.command(..)` die with it.
        let input = match self.keep_input {
            true => self.input.clone().into_owned(),
            // Left as `null`: nobody reads it after this.
            false => std::mem::take(&mut self.input).into_owned(),
        };
        let call = tool.call(input, ctx);
        tokio::pin!(call);
        // The call first, as for the gate above; the token was checked on the way in.
        let output = tokio::select! {
            biased;
            finished = &mut call => finished?,
            () = out_of_time(limit, ctx) => return Err(ToolError::Timeout(limit)),
            _ = cancel.cancelled() => {
                // The tool sees the same token: a moment to wind down on its own (tell a
                // server, remove a temp file), then it is dropped all the same.
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
                return Err(ToolError::Cancelled);
            }
        };
        if policy.check_output && !output.is_error {
            entry.check_output(&output)?;
        }
        for hook in &policy.post_hooks {
            hook.after(tool.name(), &self.input, &output, ctx).await;
        }
        Ok(output)
    }
}

/// How often a call's deadline is looked at again while the call waits for its user.
const USER_WAIT_RECHECK: Duration = Duration::from_secs(1);

/// Resolves once the call has run for `limit`, the time it waited for its user's answers
/// ([`ToolContext::waited_for_user`]) left out.
async fn out_of_time(limit: Duration, ctx: &ToolContext) {
    let start = tokio::time::Instant::now();
    loop {
        let (waited, waiting) = ctx.waited_for_user();
        let deadline = start + limit + waited;
        match waiting {
            true => tokio::time::sleep(USER_WAIT_RECHECK).await,
            false if tokio::time::Instant::now() >= deadline => return,
            false => tokio::time::sleep_until(deadline).await,
        }
    }
}

/// The registry's call API: the same road as an agent's calls, with a policy of the caller's
/// choosing (by default: timeouts, panic catch, cancellation and the size cap, no permission
/// gate).
impl ToolRegistry {
    /// Runs one call with the [default policy](CallPolicy::default): look up, validate the
    /// schema, run the tool's own check, call it within its timeout (cancelled by the
    /// context's token, a panic caught), record statistics.
    pub async fn execute(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let outcome = self
            .call_owned(name, input, ctx, &CallPolicy::default())
            .await;
        match outcome.error {
            Some(error) => Err(error),
            None => Ok(outcome.output),
        }
    }

    /// [`execute`](Self::execute), with an error turned into the `is_error` result the model
    /// gets.
    pub async fn call(&self, name: &str, input: Value, ctx: &ToolContext) -> ToolOutput {
        self.call_owned(name, input, ctx, &CallPolicy::default())
            .await
            .output
    }

    /// A call whose caller does not look at the outcome's input: the tool gets `input`
    /// itself, not a copy.
    async fn call_owned(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolContext,
        policy: &CallPolicy,
    ) -> CallOutcome<'static> {
        let travel = Travel {
            registry: self,
            name,
            malformed: None,
            ctx,
            policy,
            ask: None,
            keep_input: false,
        };
        travel.run(Cow::Owned(input)).await
    }

    /// Runs one call with this policy; with a permission gate, calls that would ask are
    /// refused (nobody to ask), naming the rule that would allow them.
    pub async fn call_with(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolContext,
        policy: &CallPolicy,
    ) -> CallOutcome<'static> {
        let outcome = run_call(self, name, RawInput::Json(&input), ctx, policy, None).await;
        let CallOutcome {
            output,
            error,
            input: used,
            started,
            duration,
        } = outcome;
        // Unchanged on the road: the caller's own input, not a copy of it.
        let input = match used {
            Cow::Owned(changed) => changed,
            Cow::Borrowed(_) => input,
        };
        CallOutcome {
            output,
            error,
            input: Cow::Owned(input),
            started,
            duration,
        }
    }
}

/// Runs a synchronous call into tool code, turning a panic into an error.
pub(crate) fn contain<T>(f: impl FnOnce() -> T) -> Result<T, ToolError> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        ToolError::failed(format!(
            "the tool panicked: {}",
            panic_message(panic.as_ref())
        ))
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

/// Cuts a whole result to the policy's budget: all text blocks (and embedded text resources,
/// in their readable form) together keep their head and tail; images and embedded binary
/// resources past the image budget are replaced by a note.
pub(crate) fn cap(mut output: ToolOutput, policy: &CallPolicy) -> ToolOutput {
    let mut image_bytes = 0usize;
    for block in &mut output.content {
        let (what, size) = match block {
            ContentBlock::Image { media_type, data } => (format!("{media_type} image"), data.len()),
            ContentBlock::Resource {
                uri,
                contents: ResourceContents::Blob { blob },
                ..
            } => (format!("binary resource {uri}"), blob.len()),
            _ => continue,
        };
        image_bytes += size;
        if image_bytes > policy.max_result_image_bytes {
            *block = ContentBlock::text(format!(
                "[{what} of {size} bytes (base64) left out: the result's images passed the \
                 limit of {} bytes]",
                policy.max_result_image_bytes
            ));
        }
    }
    let total = |count: fn(&str) -> usize| -> usize {
        output
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text { text } => count(text),
                ContentBlock::Resource {
                    contents: ResourceContents::Text { .. },
                    ..
                } => block.readable().map_or(0, |text| count(&text)),
                _ => 0,
            })
            .sum()
    };
    // A text has no more characters than bytes: most results fit without counting them.
    if total(str::len) <= policy.max_result_chars
        || total(|text| text.chars().count()) <= policy.max_result_chars
    {
        return output;
    }
    let mut text = String::new();
    let mut images = Vec::new();
    for block in output.content.drain(..) {
        match block {
            ContentBlock::Text { text: part } => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&part);
            }
            resource @ ContentBlock::Resource {
                contents: ResourceContents::Text { .. },
                ..
            } => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&resource.readable().unwrap_or_default());
            }
            other => images.push(other),
        }
    }
    output.content = std::iter::once(ContentBlock::text(cut_text(&text, policy.max_result_chars)))
        .chain(images)
        .collect();
    output
}

fn cap_error(error: ToolError, max_chars: usize) -> ToolError {
    match error {
        ToolError::InvalidInput(m) => ToolError::InvalidInput(cut_text(&m, max_chars)),
        ToolError::NotFound(m) => ToolError::NotFound(cut_text(&m, max_chars)),
        ToolError::PermissionDenied(m) => ToolError::PermissionDenied(cut_text(&m, max_chars)),
        ToolError::ExecutionFailed(m) => ToolError::ExecutionFailed(cut_text(&m, max_chars)),
        ToolError::Retry(m) => ToolError::Retry(cut_text(&m, max_chars)),
        other => other,
    }
}

/// Keeps the head and tail of a long text, saying how much was cut.
fn cut_text(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_owned();
    }
    let keep = max_chars / 2;
    let head: String = text.chars().take(keep).collect();
    let tail: String = text.chars().skip(total - keep).collect();
    let cut = total - 2 * keep;
    format!(
        "{head}\n\n[... {cut} characters cut: the result was {total} characters, the limit is \
         {max_chars} ...]\n\n{tail}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(chars: usize) -> CallPolicy {
        CallPolicy::new().with_max_result_chars(chars)
    }

    #[test]
    fn cap_counts_embedded_resources() {
        let link = ContentBlock::resource_link("file:///a", "a");
        let output = ToolOutput::blocks(vec![
            ContentBlock::resource_text("file:///long", None, "x".repeat(500)),
            link.clone(),
            ContentBlock::resource_blob("file:///bin", Some("image/x".into()), &[7; 300]),
        ]);
        let policy = policy(1000).with_max_result_image_bytes(100);
        let capped = cap(output.clone(), &policy);
        // The blob past the byte budget becomes a note; the rest fits.
        assert_eq!(capped.content[..2], output.content[..2]);
        assert_eq!(
            capped.to_text().lines().last(),
            Some(
                "[binary resource file:///bin of 400 bytes (base64) left out: the result's \
                 images passed the limit of 100 bytes]"
            )
        );
        // Over the character budget, the text resource joins the text and is cut with it;
        // the link stays as it is.
        let capped = cap(output, &policy.with_max_result_chars(100));
        assert_eq!(capped.content.len(), 2, "{capped:?}");
        let ContentBlock::Text { text } = &capped.content[0] else {
            panic!("{capped:?}")
        };
        assert!(text.starts_with("[resource file:///long]\nxxx"), "{text}");
        assert!(text.contains("characters cut"), "{text}");
        assert_eq!(capped.content[1], link);
    }

    #[test]
    fn cap_keeps_head_and_tail() {
        let text: String = ('a'..='z').cycle().take(1000).collect();
        let capped = cap(ToolOutput::text(text.clone()), &policy(100));
        let capped = capped.to_text();
        assert!(capped.starts_with(&text[..50]));
        assert!(capped.ends_with(&text[950..]));
        assert!(capped.contains("900 characters cut"), "{capped}");
        let short = cap(ToolOutput::text("short"), &policy(100));
        assert_eq!(short.to_text(), "short");
    }

    #[test]
    fn cap_counts_characters_not_bytes() {
        // 120 bytes, 60 characters: under a limit of 100 characters.
        let text = "é".repeat(60);
        let kept = cap(ToolOutput::text(text.clone()), &policy(100));
        assert_eq!(kept.to_text(), text);
        let cut = cap(ToolOutput::text("é".repeat(200)), &policy(100));
        assert!(
            cut.to_text().contains("100 characters cut"),
            "{}",
            cut.to_text()
        );
    }

    #[test]
    fn cap_counts_every_block_together() {
        let blocks = (0..30)
            .map(|i| ContentBlock::text(format!("{i:02}").repeat(500)))
            .collect();
        let capped = cap(ToolOutput::blocks(blocks), &policy(2_000));
        let text = capped.to_text();
        assert!(text.chars().count() < 2_200, "{} chars", text.len());
        assert!(text.starts_with("0000"), "{}", &text[..10]);
        assert!(text.trim_end().ends_with("2929"));
    }

    #[test]
    fn cap_gives_images_a_budget() {
        let image = || ContentBlock::Image {
            media_type: "image/png".into(),
            data: "A".repeat(600),
        };
        let output = ToolOutput::blocks(vec![image(), image()]);
        let capped = cap(output, &policy(100).with_max_result_image_bytes(1000));
        assert!(matches!(capped.content[0], ContentBlock::Image { .. }));
        assert!(
            matches!(&capped.content[1], ContentBlock::Text { text } if text.contains("left out")),
            "{:?}",
            capped.content[1]
        );
    }

    #[test]
    fn errors_are_capped_too() {
        let error = cap_error(ToolError::failed("x".repeat(10_000)), 1_000);
        assert!(error.to_string().chars().count() < 1_200);
    }
}
