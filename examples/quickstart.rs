//! The smallest complete program: two tools and an agent that uses them.
//! `cargo run --example quickstart` (offline: a scripted model plays the model's turns).

use serde_json::json;
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::{ScriptedModel, ScriptedTurn};
use tool_sdk::tool;

/// Gets the weather in a city.
#[tool(read_only, title = "Weather in {city}")]
async fn get_weather(city: String) -> String {
    format!("Sunny in {city}, 21°C")
}

/// Saves a note for the user.
#[tool(title = "Save a note")]
async fn save_note(text: String) -> String {
    format!("Saved: {text}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // With a key: tool_sdk::model::anthropic::AnthropicModel::from_env("claude-sonnet-4-5")?
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("get_weather", json!({"city": "Lisbon"})),
        ScriptedTurn::tool_call("save_note", json!({"text": "no jacket today"})),
        ScriptedTurn::text("It's sunny in Lisbon; I noted you won't need a jacket."),
    ]);
    let config = AgentConfig::new()
        .with_model(model)
        .with_tools(["get_weather", "save_note"])
        .permissions(|p| p.allow("save_note")); // read-only tools run; others ask unless allowed
    let agent = Agent::create(config).await?;
    let result = agent.prompt("Do I need a jacket in Lisbon?").await?;
    println!("{} ({} tool calls)", result.text, result.tool_calls);
    Ok(())
}
