//! Shared workloads of the benchmarks: the same trivial tool-call conversation driven through
//! tool-sdk's agent loop and, with the `rig` feature, through rig's agent loop, each with its
//! own scripted (mock) model. The criterion benches and the `loopcount` binary (run under
//! callgrind by `bench/run`) both use these, so they time the same thing.

pub mod hundred;
pub mod mock_http;
pub mod streams;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::{ScriptedModel, ScriptedTurn};
use tool_sdk::{ToolRegistry, tool};

/// The runtime every bench drives its workloads on: two worker threads, like the machine.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Adds two numbers: the trivial tool every peer runs.
#[tool(read_only, register = false)]
pub async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A registry holding only [`AddTool`], so agent set-up does not compile every built-in's
/// validator (set-up is not timed, but it keeps the benches quick).
pub fn add_registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry
        .register(Arc::new(AddTool))
        .expect("the add tool registers");
    Arc::new(registry)
}

/// Sleeps 100 ms: a read-only tool, so the calls of one turn run concurrently.
#[tool(read_only, register = false)]
pub async fn nap() -> &'static str {
    tokio::time::sleep(Duration::from_millis(100)).await;
    "rested"
}

/// Sleeps 100 ms: the same as [`nap`] but not read-only, so its calls run one at a time.
#[tool(register = false)]
pub async fn nap_mut() -> &'static str {
    tokio::time::sleep(Duration::from_millis(100)).await;
    "rested"
}

/// A registry holding the two 100 ms tools.
pub fn nap_registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(NapTool)).expect("registers");
    registry.register(Arc::new(NapMutTool)).expect("registers");
    Arc::new(registry)
}

/// The script: `turns` assistant turns of `calls` parallel `add` calls each, then a final
/// text turn. The run takes `turns + 1` model steps and `turns * calls` tool calls.
pub fn script(turns: usize, calls: usize) -> Vec<ScriptedTurn> {
    script_of("add", &json!({"a": 2, "b": 3}), turns, calls)
}

/// [`script`] with any tool and input.
pub fn script_of(
    tool: &str,
    input: &serde_json::Value,
    turns: usize,
    calls: usize,
) -> Vec<ScriptedTurn> {
    let mut script = Vec::with_capacity(turns + 1);
    for _ in 0..turns {
        let mut turn = ScriptedTurn::tool_call(tool, input.clone());
        for _ in 1..calls {
            turn = turn.with_tool_call(tool, input.clone());
        }
        script.push(turn);
    }
    script.push(ScriptedTurn::text("done"));
    script
}

/// A fresh tool-sdk agent ready to play the script once.
pub async fn ours_agent(registry: &Arc<ToolRegistry>, turns: usize, calls: usize) -> Agent {
    let config = AgentConfig::new()
        .with_model(ScriptedModel::new(script(turns, calls)))
        .with_registry(registry.clone())
        .with_tools(["add"])
        .limits(|l| l.with_max_turns(turns as u32 + 1));
    Agent::create(config).await.expect("the agent builds")
}

/// Runs the workload `iters` times through tool-sdk's loop; returns the time spent in
/// `Agent::prompt` only (agent set-up excluded).
pub async fn ours_runs(iters: u64, turns: usize, calls: usize) -> Duration {
    let registry = add_registry();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let agent = ours_agent(&registry, turns, calls).await;
        let started = Instant::now();
        let result = agent.prompt("go").await.expect("the run succeeds");
        total += started.elapsed();
        assert_eq!(result.tool_calls, turns * calls);
        assert_eq!(result.text, "done");
    }
    total
}

/// Runs `calls` calls of `tool` (no arguments) in one turn, `iters` times; returns the time
/// spent in `Agent::prompt`.
pub async fn ours_one_turn(
    iters: u64,
    registry: &Arc<ToolRegistry>,
    tool: &str,
    calls: usize,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let config = AgentConfig::new()
            .with_model(ScriptedModel::new(script_of(tool, &json!({}), 1, calls)))
            .with_registry(registry.clone())
            .with_tools([tool])
            .permissions(|p| p.allow(tool))
            .limits(|l| l.with_max_turns(2));
        let agent = Agent::create(config).await.expect("the agent builds");
        let started = Instant::now();
        let result = agent.prompt("go").await.expect("the run succeeds");
        total += started.elapsed();
        assert_eq!(result.tool_calls, calls);
        assert!(result.errors.is_empty(), "{:?}", result.errors);
    }
    total
}

/// The rig peer: rig-agent's classic agent loop over rig-core's `MockCompletionModel`, with
/// the same `add` tool, turns and calls.
#[cfg(feature = "rig")]
pub mod rig {
    use std::time::{Duration, Instant};

    use rig_agent::AgentBuilder;
    use rig_agent::core::completion::AssistantContent;
    use rig_agent::core::message::{ToolCall, ToolFunction, ToolName};
    use rig_agent::test_utils::{MockCompletionModel, MockTurn};
    use rig_agent::tool::{Tool, ToolContext, ToolExecutionError};
    use serde::Deserialize;
    use serde_json::json;

    /// The arguments of `add`.
    #[derive(Deserialize)]
    pub struct AddArgs {
        a: i64,
        b: i64,
    }

    /// `add` as a rig tool.
    pub struct Add;

    impl Tool for Add {
        const NAME: &'static str = "add";
        type Error = ToolExecutionError;
        type Args = AddArgs;
        type Output = i64;

        fn description(&self) -> String {
            "Adds two numbers.".into()
        }

        fn parameters(&self) -> serde_json::Value {
            json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            })
        }

        async fn call(
            &self,
            _context: &mut ToolContext,
            args: AddArgs,
        ) -> Result<i64, ToolExecutionError> {
            Ok(args.a + args.b)
        }
    }

    fn script(turns: usize, calls: usize) -> Vec<MockTurn> {
        let mut script = Vec::with_capacity(turns + 1);
        for turn in 0..turns {
            script.push(MockTurn::from_contents((0..calls).map(|call| {
                AssistantContent::ToolCall(ToolCall::from_wire(
                    format!("call_{turn}_{call}"),
                    ToolFunction::new(
                        ToolName::new("add").expect("a valid name"),
                        json!({"a": 2, "b": 3}),
                    ),
                ))
            })));
        }
        script.push(MockTurn::text("done"));
        script
    }

    /// Runs the workload `iters` times through rig's loop; returns the time spent running.
    pub async fn runs(iters: u64, turns: usize, calls: usize) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let model = MockCompletionModel::from_turns(script(turns, calls));
            let agent = AgentBuilder::new(model).tool(Add).build();
            let started = Instant::now();
            let response = agent
                .prompt("go")
                .max_turns(turns + 1)
                .run()
                .await
                .expect("the rig run succeeds");
            total += started.elapsed();
            std::hint::black_box(response);
        }
        total
    }
}
