//! The benchmark's floor: a workflow that runs a no-op activity `n` times, one after another,
//! so that one round trip (a workflow task, an activity task, their results recorded) is
//! what Temporal alone costs, beneath any agent; or as local activities (run by the worker
//! inside the workflow task, their results recorded with its completion), to measure what a
//! step would cost with its call run so.

use std::sync::Arc;
use std::time::Duration;

use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{ActivityOptions, LocalActivityOptions, WorkflowContext, WorkflowResult};

/// Runs [`Noop::noop`] `n` times in a row, as local activities if `local`.
#[workflow]
#[derive(Default)]
pub struct Floor;

#[workflow_methods]
impl Floor {
    /// Returns how many activities ran.
    #[run(name = "bench.floor")]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        (n, local): (u32, bool),
    ) -> WorkflowResult<u32> {
        let timeout = Duration::from_secs(30);
        let options = ActivityOptions::with_start_to_close_timeout(timeout).build();
        let local_options = LocalActivityOptions::builder()
            .start_to_close_timeout(timeout)
            .build();
        for step in 0..n {
            if local {
                ctx.execute_local_activity(Noop::noop, step, local_options.clone())
                    .await?;
            } else {
                ctx.execute_activity(Noop::noop, step, options.clone())
                    .await?;
            }
        }
        Ok(n)
    }
}

/// The no-op activity.
pub struct Noop;

#[activities]
impl Noop {
    /// Returns its input.
    #[activity(name = "bench.noop")]
    pub async fn noop(
        self: Arc<Self>,
        _ctx: ActivityContext,
        step: u32,
    ) -> Result<u32, ActivityError> {
        Ok(step)
    }
}
