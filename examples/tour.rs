//! Two tools, the registry that holds them, the schema a model sees, what the model gets back
//! for a good call and for a bad one, and then an agent that uses both.
//!
//! ```text
//! cargo run --example tour
//! ```
//!
//! Offline by default: the agent runs on a `ScriptedModel`. With `ANTHROPIC_API_KEY` (or
//! `OPENAI_API_KEY`) set, it runs on the real model instead (`TOUR_MODEL` picks the id).

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_sdk::agent::{Agent, AgentConfig, AgentEvent};
use tool_sdk::model::{Model, ScriptedModel, ScriptedTurn};
use tool_sdk::schema::Provider;
use tool_sdk::{State, ToolContext, ToolError, ToolRegistry, tool};

/// Temperature unit.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// A forecast, sent to the model as JSON.
#[derive(Debug, Serialize)]
struct Forecast {
    city: String,
    days: Vec<f64>,
    unit: Unit,
}

/// Gets the temperature forecast for a city.
#[tool(read_only, idempotent, title = "Weather in {city}")]
async fn get_weather(
    /// The city, e.g. "Lisbon".
    city: String,
    /// How many days ahead, 1 to 7.
    #[arg(default = 3)]
    days: u8,
    /// The unit of the temperatures.
    unit: Option<Unit>,
) -> Result<Forecast, ToolError> {
    if !(1..=7).contains(&days) {
        return Err(ToolError::invalid_input(format!(
            "days must be between 1 and 7, got {days}"
        )));
    }
    let unit = unit.unwrap_or(Unit::Celsius);
    // A fixed, offline forecast: enough to show the plumbing.
    let base = city.len() as f64 + 10.0;
    let days = (0..days)
        .map(|day| {
            let celsius = base + f64::from(day) * 0.5;
            match unit {
                Unit::Celsius => celsius,
                Unit::Fahrenheit => celsius * 9.0 / 5.0 + 32.0,
            }
        })
        .collect();
    Ok(Forecast { city, days, unit })
}

/// Notes kept by the app; tools reach them through `State`.
#[derive(Clone, Default)]
struct Notes(Arc<Mutex<Vec<String>>>);

/// Saves a note for later.
#[tool(destructive = false, permission = "Save the note \"{text}\"")]
async fn save_note(
    /// What to remember.
    text: String,
    notes: State<Notes>,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    ctx.progress("saving");
    let mut notes = notes
        .0
        .0
        .lock()
        .map_err(|_| ToolError::failed("notes are locked"))?;
    notes.push(text);
    Ok(format!("Saved. {} note(s) so far.", notes.len()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Every #[tool] in the program registered itself; pick the two this app wants.
    let registry = ToolRegistry::new();
    for tool in tool_sdk::get_tools(Some(&["get_weather", "save_note"]))? {
        registry.register_from(tool, "tour")?;
    }

    println!("== The registry holds");
    for info in registry.tool_infos() {
        let mode = if info.read_only {
            "read-only"
        } else {
            "mutating"
        };
        println!("- {} ({mode}): {}", info.name, info.description);
    }

    println!("\n== What Anthropic's API receives");
    for definition in registry.build_tools(Provider::Anthropic) {
        println!("{}", serde_json::to_string_pretty(&definition)?);
    }

    let mut state = tool_sdk::StateMap::new();
    state.insert(Notes::default());
    let ctx = ToolContext::default().with_state(state);

    let good = json!({"city": "Lisbon", "days": "2", "unit": "fahrenheit"});
    let weather = registry
        .get("get_weather")
        .ok_or("get_weather is registered")?;
    println!("\n== A good call: {}", weather.display_title(&good));
    println!("input:  {good}  (\"2\" is coerced to 2)");
    let output = registry.call("get_weather", good, &ctx).await;
    println!(
        "result: {} (is_error: {})",
        output.to_text(),
        output.is_error
    );

    let bad = json!({"citty": "Lisbon", "days": "many", "unit": "kelvin"});
    println!("\n== A bad call, and the tool_result the model gets");
    println!("input:  {bad}");
    let output = registry.call("get_weather", bad, &ctx).await;
    println!(
        "result (is_error: {}):\n{}",
        output.is_error,
        output.to_text()
    );

    let note = json!({"text": "buy milk"});
    let saver = registry.get("save_note").ok_or("save_note is registered")?;
    println!(
        "\n== Asking permission: {}",
        saver.permission_prompt(&note).title
    );
    let output = registry.call("save_note", note, &ctx).await;
    println!("result: {}", output.to_text());

    let stats = registry.stats("get_weather").unwrap_or_default();
    println!(
        "\n== get_weather was called {} times, {} failed",
        stats.calls, stats.failures
    );

    run_agent(Arc::new(registry)).await
}

/// The same two tools, driven by a model through the agent loop.
async fn run_agent(registry: Arc<ToolRegistry>) -> Result<(), Box<dyn std::error::Error>> {
    let (model, source) = pick_model()?;
    println!("\n== An agent with both tools, on {source}");
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(registry)
            .with_tools(["get_weather", "save_note"])
            .with_state(Notes::default())
            // Reading the weather needs no permission (read-only); saving a note does.
            .permissions(|p| p.allow("save_note"))
            .model(|m| {
                m.with_system_prompt("You are a concise assistant. Use the tools when they help.")
            }),
    )
    .await?;
    let prompt = "What will the weather be in Lisbon over the next two days? Save a note \
                  reminding me to pack accordingly.";
    println!("user: {prompt}");
    let mut run = agent.run(prompt);
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::TextDelta(text) => print!("{text}"),
            AgentEvent::ToolRequested { title, .. } => println!("\n  -> {title}"),
            AgentEvent::ToolCompleted { name, output, .. } => {
                println!("  <- {name}: {}", output.to_text())
            }
            AgentEvent::ToolFailed { name, output, .. } => {
                println!("  <- {name} failed: {}", output.to_text())
            }
            AgentEvent::Finished(result) => {
                println!(
                    "\n\n== {} turn(s), {} tool call(s), {} tokens in, {} out",
                    result.turns,
                    result.tool_calls,
                    result.usage.input_tokens,
                    result.usage.output_tokens
                );
                if let Some(error) = result.error {
                    return Err(error.into());
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A real model when a key is set, else a scripted one that plays a plausible run.
fn pick_model() -> Result<(Arc<dyn Model>, String), Box<dyn std::error::Error>> {
    use tool_sdk::model::{anthropic::AnthropicModel, openai::OpenAiModel};
    let chosen = std::env::var("TOUR_MODEL").ok();
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        let id = chosen.unwrap_or_else(|| "claude-sonnet-4-5".into());
        return Ok((
            Arc::new(AnthropicModel::from_env(&id)?),
            format!("Anthropic {id}"),
        ));
    }
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        let id = chosen.unwrap_or_else(|| "gpt-4.1-mini".into());
        return Ok((
            Arc::new(OpenAiModel::from_env(&id)?),
            format!("OpenAI {id}"),
        ));
    }
    let script = ScriptedModel::new([ScriptedTurn::tool_call(
        "get_weather",
        json!({"city": "Lisbon", "days": 2}),
    )
    .with_text("Let me check the forecast.")])
    .with_responder(|request| {
        // React to the forecast the tool really returned.
        let last = request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let forecast = serde_json::to_string(&last).unwrap_or_default();
        if forecast.contains("Saved.") {
            ScriptedTurn::text(
                "Lisbon will be mild, around 16 degrees. I saved a note to pack a light jacket.",
            )
        } else {
            ScriptedTurn::tool_call("save_note", json!({"text": "Lisbon: pack a light jacket"}))
        }
    });
    Ok((
        Arc::new(script),
        "a ScriptedModel (offline; set ANTHROPIC_API_KEY or OPENAI_API_KEY for a real one)".into(),
    ))
}
