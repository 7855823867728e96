//! The benchmark's floor: a workflow that runs a no-op activity `n` times, one after another,
//! so that one round trip (a workflow task, an activity task, their results recorded) is
//! what Temporal alone costs, beneath any agent.

use std::sync::Arc;
use std::time::Duration;

use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{ActivityOptions, WorkflowContext, WorkflowResult};

/// Runs [`Noop::noop`] `n` times in a row.
#[workflow]
#[derive(Default)]
pub struct Floor;

#[workflow_methods]
impl Floor {
    /// Returns how many activities ran.
    #[run(name = "bench.floor")]
    pub async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> WorkflowResult<u32> {
        let options = ActivityOptions::with_start_to_close_timeout(Duration::from_secs(30)).build();
        for step in 0..n {
            ctx.execute_activity(Noop::noop, step, options.clone())
                .await?;
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
