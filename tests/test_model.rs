//! TestModel: every tool it is offered called with arguments made up from its schema, each
//! valid (the registry's own validator and the `jsonschema` crate say so), the same for the
//! same seed; typed answers through `prompt_as`; a summary of the results at the end.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::{Message, MessageContent, TestModel};
use tool_sdk::permission::PermissionMode;
use tool_sdk::{JsonSchema, ToolRegistry, schemars, tool};

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-sdk-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn calls(messages: &[Message]) -> Vec<(String, Value)> {
    messages
        .iter()
        .flat_map(|m| m.tool_uses())
        .map(|call| (call.name.clone(), call.input.json_or_empty().into_owned()))
        .collect()
}

fn results(messages: &[Message]) -> Vec<(bool, String)> {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            MessageContent::ToolResult {
                content, is_error, ..
            } => Some((
                *is_error,
                content
                    .iter()
                    .map(|c| match c {
                        tool_sdk::ContentBlock::Text { text } => text.as_str(),
                        _ => "",
                    })
                    .collect(),
            )),
            _ => None,
        })
        .collect()
}

// ---- every built-in tool ----

#[tokio::test]
async fn every_builtin_tool_gets_arguments_its_own_validator_accepts() {
    let registry = ToolRegistry::new();
    for tool in tool_sdk::builtin_tools().unwrap() {
        registry.register(tool).unwrap();
    }
    let specs: Vec<(String, Value)> = registry
        .get_tools(None)
        .unwrap()
        .iter()
        .map(|t| (t.name().to_owned(), t.input_schema().clone()))
        .collect();
    assert!(specs.len() >= 10, "{:?}", specs.iter().map(|s| &s.0));
    for seed in 0..64 {
        let model = TestModel::new().with_seed(seed);
        for (name, schema) in &specs {
            let input = model
                .sample(schema)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            registry
                .validate(name, input.clone())
                .unwrap_or_else(|e| panic!("{name} refused {input} (seed {seed}): {e}"));
        }
    }

    // Through the loop: every tool called once, in a scratch directory, nothing asked.
    let dir = temp_dir("test-model-builtins");
    let model = TestModel::new()
        .with_seed(11)
        // A made-up command could be anything: this one is harmless; the web stays local.
        .with_arguments("Bash", json!({"command": "echo made-up"}))
        .with_arguments(
            "WebFetch",
            json!({"url": "http://127.0.0.1:9/", "prompt": "summary"}),
        )
        .with_text("done");
    let registry = Arc::new(registry);
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model.clone())
            .with_registry(registry.clone())
            .with_working_dir(&dir)
            .permissions(|p| p.with_mode(PermissionMode::BypassPermissions)),
    )
    .await
    .unwrap();
    let result = agent.prompt("Try every tool").await.unwrap();
    assert_eq!(result.text, "done");
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let made = calls(&result.messages.to_vec());
    let called: Vec<&String> = made.iter().map(|(name, _)| name).collect();
    assert_eq!(called, offered.iter().collect::<Vec<_>>());
    let outcomes = results(&result.messages.to_vec());
    assert_eq!(outcomes.len(), offered.len());
    for ((name, input), (failed, text)) in made.iter().zip(&outcomes) {
        // Some fail for want of a file or a shell; none for its arguments' shape.
        registry
            .validate(name, input.clone())
            .unwrap_or_else(|e| panic!("{name} {input}: {e}; the tool said: {text}"));
        if name == "Bash" {
            assert!(!failed && text.contains("made-up"), "{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- macro tools: typed values arrive ----

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum Priority {
    Low,
    VeryHigh,
}

/// A line item.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Item {
    #[serde(rename = "itemName")]
    #[schemars(length(min = 2, max = 6))]
    name: String,
    #[schemars(range(min = 1, max = 5))]
    quantity: u8,
    /// Unit price, strictly positive and below 100.
    #[schemars(range(min = 0.5, max = 99.5))]
    price: f64,
}

/// An order.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Order {
    #[schemars(length(min = 1, max = 3))]
    items: Vec<Item>,
    priority: Priority,
    note: Option<String>,
    ship_to: Option<Address>,
}

/// Where it goes.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
struct Address {
    #[serde(rename = "zipCode")]
    #[schemars(regex(pattern = r"^[0-9]{5}$"))]
    zip: String,
    country: Option<Priority>,
}

static ORDERS: Mutex<Vec<Order>> = Mutex::new(Vec::new());

/// Places an order.
#[tool(register = false)]
async fn place_order(#[input] order: Order) -> String {
    let count = order.items.len();
    ORDERS.lock().unwrap().push(order);
    format!("{count} items")
}

static RATINGS: Mutex<Vec<(u8, Option<String>)>> = Mutex::new(Vec::new());

/// Rates something.
#[tool(register = false, read_only)]
async fn rate(stars: u8, comment: Option<String>, scores: Vec<i32>) -> String {
    RATINGS.lock().unwrap().push((stars, comment));
    format!("rated ({} scores)", scores.len())
}

#[tokio::test]
async fn macro_tools_receive_typed_values_within_their_schemas() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Arc::new(PlaceOrderTool)).unwrap();
    registry.register(Arc::new(RateTool)).unwrap();
    for seed in 0..24 {
        let agent = Agent::create(
            AgentConfig::new()
                .with_model(TestModel::new().with_seed(seed))
                .with_registry(registry.clone())
                .permissions(|p| p.with_mode(PermissionMode::BypassPermissions)),
        )
        .await
        .unwrap();
        let result = agent.prompt("Order and rate").await.unwrap();
        assert!(result.errors.is_empty(), "seed {seed}: {:?}", result.errors);
        let summary: Value = serde_json::from_str(&result.text).unwrap();
        assert!(summary["rate"].as_str().unwrap().starts_with("rated ("));
        assert!(summary["place_order"].as_str().unwrap().ends_with("items"));
    }
    // At least: the other tests of this file call these tools too, at the same time.
    let orders = ORDERS.lock().unwrap().clone();
    assert!(orders.len() >= 24);
    for order in &orders {
        assert!((1..=3).contains(&order.items.len()), "{order:?}");
        for item in &order.items {
            assert!((2..=6).contains(&item.name.chars().count()), "{item:?}");
            assert!((1..=5).contains(&item.quantity), "{item:?}");
            assert!((0.5..=99.5).contains(&item.price), "{item:?}");
        }
        if let Some(address) = &order.ship_to {
            assert!(
                address.zip.len() == 5 && address.zip.chars().all(|c| c.is_ascii_digit()),
                "{address:?}"
            );
        }
    }
    // Optional fields and enum variants both ways, over the seeds.
    assert!(orders.iter().any(|o| o.note.is_some()) && orders.iter().any(|o| o.note.is_none()));
    assert!(orders.iter().any(|o| o.ship_to.is_some()));
    assert!(orders.iter().any(|o| o.priority == Priority::Low));
    assert!(orders.iter().any(|o| o.priority == Priority::VeryHigh));
    let ratings = RATINGS.lock().unwrap().clone();
    assert!(ratings.len() >= 24);
    assert!(ratings.iter().any(|r| r.1.is_some()) && ratings.iter().any(|r| r.1.is_none()));
    assert!(ratings.iter().any(|r| r.0 != ratings[0].0), "{ratings:?}");
}

#[tokio::test]
async fn calling_names_the_tools_and_an_unknown_one_is_a_clear_error() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Arc::new(PlaceOrderTool)).unwrap();
    registry.register(Arc::new(RateTool)).unwrap();
    let config = |model: TestModel| {
        AgentConfig::new()
            .with_model(model)
            .with_registry(registry.clone())
            .permissions(|p| p.with_mode(PermissionMode::BypassPermissions))
    };
    let model = TestModel::new().calling(["rate"]);
    let agent = Agent::create(config(model.clone())).await.unwrap();
    let result = agent.prompt("Rate").await.unwrap();
    let names: Vec<String> = calls(&result.messages.to_vec())
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(names, ["rate"]);
    let requests = model.requests();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered.len(), 2, "{offered:?}");
    assert_eq!(model.requests().len(), 2);

    let agent = Agent::create(config(TestModel::new().calling_none().with_text("nothing")))
        .await
        .unwrap();
    let result = agent.prompt("Nothing").await.unwrap();
    assert_eq!((result.text.as_str(), result.tool_calls), ("nothing", 0));

    let agent = Agent::create(config(TestModel::new().calling(["rate", "fly"])))
        .await
        .unwrap();
    let error = agent.prompt("Fly").await.unwrap_err().to_string();
    assert!(
        error.contains("`fly`")
            && (error.contains("offered: place_order, rate")
                || error.contains("offered: rate, place_order")),
        "{error}"
    );
}

// ---- typed answers ----

/// A trip plan.
#[derive(Debug, Deserialize, JsonSchema)]
struct Trip {
    #[schemars(length(min = 1))]
    destination: String,
    #[schemars(range(min = 1, max = 14))]
    nights: u32,
    travellers: Vec<Traveller>,
    budget: Option<f64>,
}

/// Someone on the trip.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Traveller {
    Adult { name: String },
    Child { age: u8 },
}

#[tokio::test]
async fn prompt_as_gets_a_valid_typed_answer_after_the_tools() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Arc::new(RateTool)).unwrap();
    let (mut names, mut ages) = (Vec::new(), Vec::new());
    for seed in 0..8 {
        let model = TestModel::new().with_seed(seed);
        let agent = Agent::create(
            AgentConfig::new()
                .with_model(model.clone())
                .with_registry(registry.clone()),
        )
        .await
        .unwrap();
        let trip: Trip = agent.prompt_as("Plan a trip").await.unwrap();
        assert!(!trip.destination.is_empty() && (1..=14).contains(&trip.nights));
        assert!(trip.travellers.len() <= 3 && trip.budget.is_none_or(f64::is_finite));
        for traveller in trip.travellers {
            match traveller {
                Traveller::Adult { name } => names.push(name),
                Traveller::Child { age } => ages.push(age),
            }
        }
        // The tool ran first, then the answer came as a call of the output tool, once.
        let requests = model.requests();
        assert_eq!(requests.len(), 2, "seed {seed}");
        assert!(requests.iter().all(|r| r.output.is_some()));
    }
    // Both variants of the tagged enum, over the seeds.
    assert!(!names.is_empty() && !ages.is_empty(), "{names:?} {ages:?}");
    // An answer of the test's choosing.
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(TestModel::new().with_output(json!({
                "destination": "Oslo", "nights": 3, "travellers": [{"kind": "child", "age": 7}]
            })))
            .with_registry(registry.clone()),
    )
    .await
    .unwrap();
    let trip: Trip = agent.prompt_as("Plan a trip").await.unwrap();
    assert_eq!((trip.destination.as_str(), trip.nights), ("Oslo", 3));
    assert!(matches!(trip.travellers[..], [Traveller::Child { age: 7 }]));
    // A bare type (not an object) is wrapped by the agent, and still answered.
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(TestModel::new().calling_none())
            .with_registry(registry.clone()),
    )
    .await
    .unwrap();
    let list: Vec<Traveller> = agent.prompt_as("Who?").await.unwrap();
    assert!(list.len() <= 3);
}

// ---- determinism ----

#[tokio::test]
async fn the_same_seed_makes_the_same_arguments() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Arc::new(PlaceOrderTool)).unwrap();
    registry.register(Arc::new(RateTool)).unwrap();
    let run = |seed: u64| {
        let registry = registry.clone();
        async move {
            let agent = Agent::create(
                AgentConfig::new()
                    .with_model(TestModel::new().with_seed(seed))
                    .with_registry(registry)
                    .permissions(|p| p.with_mode(PermissionMode::BypassPermissions)),
            )
            .await
            .unwrap();
            calls(&agent.prompt("Go").await.unwrap().messages.to_vec())
        }
    };
    let first = run(42).await;
    assert_eq!(first, run(42).await);
    assert_eq!(first.len(), 2);
    let others: Vec<_> = [1, 2, 3].into_iter().map(run).collect();
    let mut differs = false;
    for other in others {
        differs |= other.await != first;
    }
    assert!(differs, "other seeds should make other arguments");
}

// ---- a corpus of tricky schemas, checked by the jsonschema crate ----

fn corpus() -> Vec<Value> {
    vec![
        json!({"type": "integer", "exclusiveMinimum": 3, "exclusiveMaximum": 5}),
        json!({"type": "number", "exclusiveMinimum": 0, "maximum": 0.001}),
        json!({"type": "integer", "minimum": 7, "multipleOf": 5, "maximum": 40}),
        json!({"type": "number", "multipleOf": 0.25, "minimum": 1.1, "maximum": 1.6}),
        json!({"type": "string", "minLength": 12, "maxLength": 12}),
        json!({"type": "string", "format": "date-time"}),
        json!({"type": "object", "properties": {
            "when": {"type": "string", "format": "date"},
            "site": {"type": "string", "format": "uri"},
            "mail": {"type": "string", "format": "email"},
            "id": {"type": "string", "format": "uuid"}
        }, "required": ["when", "site", "mail", "id"], "additionalProperties": false}),
        json!({"enum": ["a", 1, null, {"x": [1]}]}),
        json!({"const": {"kind": "fixed"}}),
        json!({"type": ["string", "null"], "minLength": 3}),
        json!({"oneOf": [
            {"type": "object", "properties": {"t": {"const": "a"}, "n": {"type": "integer"}},
             "required": ["t", "n"]},
            {"type": "object", "properties": {"t": {"const": "b"}, "s": {"type": "string"}},
             "required": ["t", "s"]}
        ]}),
        // Overlapping branches: an integer is also a number, so only a fraction is valid.
        json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}),
        json!({"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}],
               "$defs": {"Point": {"type": "object",
                   "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                   "required": ["x", "y"]}}}),
        // A recursive type, as schemars emits it.
        json!({"$ref": "#/$defs/Tree", "$defs": {"Tree": {"type": "object",
            "properties": {"label": {"type": "string"},
                           "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
            "required": ["label", "children"]}}}),
        json!({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 3},
               "minItems": 3, "maxItems": 4, "uniqueItems": true}),
        json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}],
               "items": false}),
        json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string", "maxLength": 2}}, "required": ["b"]}
        ]}),
        json!({"type": "object", "minProperties": 3, "additionalProperties": {"type": "boolean"},
               "properties": {"only": {"type": "integer"}}}),
        json!({"type": "object", "properties": {"v": {"type": "integer"}},
               "required": ["v"], "not": {"properties": {"v": {"const": 0}}},
               "additionalProperties": false}),
        json!({"type": "string", "pattern": "^[a-z]+-[0-9]+$"}),
        json!({"type": "string", "pattern": "^(GET|POST) /[a-z]{1,8}(\\?q=\\d+)?$",
               "maxLength": 24}),
        json!({"type": "object", "properties": {
            "deep": {"type": "object", "properties": {
                "deeper": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "properties": {"leaf": {"type": "integer", "minimum": 1e3}},
                    "required": ["leaf"]}}},
                "required": ["deeper"]}},
            "required": ["deep"]}),
        json!({"definitions": {"Color": {"enum": ["red", "green"]}},
               "type": "object", "properties": {"c": {"$ref": "#/definitions/Color"}},
               "required": ["c"]}),
        json!({"type": "integer", "minimum": -5, "exclusiveMaximum": -4}),
        json!({"type": "number", "minimum": 1e15, "maximum": 1e15}),
    ]
}

#[test]
fn made_up_values_are_valid_against_every_schema_of_the_corpus() {
    for schema in corpus() {
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&schema)
            .unwrap();
        let mut distinct = std::collections::HashSet::new();
        for seed in 0..50 {
            let value = TestModel::new()
                .with_seed(seed)
                .sample(&schema)
                .unwrap_or_else(|e| panic!("{schema}: {e}"));
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{schema}\n{value}\n{errors:?}");
            distinct.insert(value.to_string());
        }
        assert!(!distinct.is_empty());
    }
}

#[test]
fn a_schema_nothing_fits_is_a_clear_error() {
    for (schema, says) in [
        (
            json!({"type": "integer", "minimum": 5, "maximum": 4}),
            "no integer between",
        ),
        (
            json!({"type": "string", "minLength": 3, "maxLength": 2}),
            "minLength 3 is above",
        ),
        (json!({"enum": []}), "the enum is empty"),
        (
            json!({"properties": {"a": false}, "required": ["a"]}),
            "at /a: the schema `false`",
        ),
        (json!({"$ref": "#/$defs/Missing"}), "Missing"),
        (
            json!({"type": "string", "pattern": "^a{3}$", "maxLength": 2}),
            "TestModel::with_arguments",
        ),
    ] {
        let error = TestModel::new().sample(&schema).unwrap_err();
        assert!(error.contains(says), "{schema}: {error}");
    }
}
