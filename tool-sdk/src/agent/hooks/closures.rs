//! The `on_*` methods of [`Hooks`]: a closure as a hook for one event.

use std::future::ready;

use super::{
    CompactDecision, CompactRequest, Hook, HookDecision, Hooks, Notification, PermissionAnswer,
    PermissionQuestion, PromptCheck, SessionEnd, SessionStart, StopCheck, StopContext,
    SubagentStart, ToolCall, ToolFailure, ToolResult,
};
use crate::BoxFuture;

/// A closure hook's output: what it returns, or nothing.
macro_rules! or_unit {
    () => {
        ()
    };
    ($output:ty) => {
        $output
    };
}

/// Generates the `on_*` closure setters of [`Hooks`]: each wraps a closure into a [`Hook`]
/// implementing that event alone.
macro_rules! closure_hooks {
    ($(
        $(#[$doc:meta])*
        $setter:ident => $name:ident: fn $method:ident(&self, $arg:ident: &$input:ty) $(-> $output:ty)?;
    )*) => {
        impl Hooks {
            $(
                $(#[$doc])*
                pub fn $setter<F>(self, hook: F) -> Self
                where
                    F: Fn(&$input) $(-> $output)? + Send + Sync + 'static,
                {
                    self.with_hook($name(hook))
                }
            )*
        }
        $(
            struct $name<F>(F);

            impl<F> Hook for $name<F>
            where
                F: Fn(&$input) $(-> $output)? + Send + Sync,
            {
                fn $method<'a>(&'a self, $arg: &'a $input) -> BoxFuture<'a, or_unit!($($output)?)> {
                    Box::pin(ready((self.0)($arg)))
                }
            }
        )*
    };
}

closure_hooks! {
    /// Adds a closure as a `pre_tool_use` hook.
    on_pre_tool_use => OnPreToolUse: fn pre_tool_use(&self, call: &ToolCall<'_>) -> HookDecision;
    /// Adds a closure as a `post_tool_use` hook.
    on_post_tool_use => OnPostToolUse: fn post_tool_use(&self, result: &ToolResult<'_>);
    /// Adds a closure as a `post_tool_use_failure` hook.
    on_post_tool_use_failure => OnPostToolUseFailure:
        fn post_tool_use_failure(&self, failure: &ToolFailure<'_>);
    /// Adds a closure as a `permission_request` hook.
    on_permission_request => OnPermissionRequest:
        fn permission_request(&self, question: &PermissionQuestion) -> Option<PermissionAnswer>;
    /// Adds a closure as a `user_prompt_submit` hook.
    on_user_prompt_submit => OnUserPromptSubmit: fn user_prompt_submit(&self, prompt: &str) -> PromptCheck;
    /// Adds a closure as a `notification` hook.
    on_notification => OnNotification: fn notification(&self, notification: &Notification);
    /// Adds a closure as a `stop` hook.
    on_stop => OnStop: fn stop(&self, stop: &StopContext<'_>) -> StopCheck;
    /// Adds a closure as a `subagent_start` hook.
    on_subagent_start => OnSubagentStart: fn subagent_start(&self, start: &SubagentStart<'_>);
    /// Adds a closure as a `subagent_stop` hook.
    on_subagent_stop => OnSubagentStop: fn subagent_stop(&self, stop: &StopContext<'_>) -> StopCheck;
    /// Adds a closure as a `pre_compact` hook.
    on_pre_compact => OnPreCompact: fn pre_compact(&self, request: &CompactRequest) -> CompactDecision;
    /// Adds a closure as a `session_start` hook.
    on_session_start => OnSessionStart: fn session_start(&self, start: &SessionStart<'_>);
    /// Adds a closure as a `session_end` hook.
    on_session_end => OnSessionEnd: fn session_end(&self, end: &SessionEnd<'_>);
}
