//! A crate of tools on tool-sdk-core alone: its tools work, register, and its dependency tree
//! holds none of the runtime's heavy crates.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::json;
use tools_core::{State, StateMap, Tool, ToolContext, ToolRegistration};
use tools_only::{AddTool, CountTool, Counter, DoubleTool, GreetTool, Limits};

#[tokio::test]
async fn the_tools_run_and_register() {
    let ctx = ToolContext::default();
    let out = AddTool.call(json!({"a": 2, "b": 3}), &ctx).await.unwrap();
    assert_eq!(out.to_text(), "5");
    assert_eq!(
        AddTool.display_title(&json!({"a": 2, "b": 3})),
        "Add 2 and 3"
    );

    let names: BTreeSet<&str> = ToolRegistration::all().map(|r| r.name()).collect();
    for name in ["add", "count", "greet"] {
        assert!(names.contains(name), "{name} is not registered: {names:?}");
    }
    let made = ToolRegistration::all()
        .find(|r| r.name() == "greet")
        .unwrap()
        .make();
    assert_eq!(made.name(), "greet");
}

#[tokio::test]
async fn injected_parameters_come_from_the_context_and_stay_out_of_the_schema() {
    // State and &ToolContext: no properties, and the state is listed as required.
    let schema = CountTool.input_schema();
    assert!(
        schema.get("properties").is_none_or(|p| p == &json!({})),
        "{schema}"
    );
    assert_eq!(
        CountTool.required_state(),
        vec![State::<Counter>::requirement()]
    );
    let mut state = StateMap::new();
    state.insert(Counter::default());
    let ctx = ToolContext::default()
        .with_state(state)
        .with_session_id("s1");
    let out = CountTool.call(json!({}), &ctx).await.unwrap();
    assert_eq!(out.to_text(), "1 in s1");
    let missing = CountTool
        .call(json!({}), &ToolContext::default())
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("Counter"), "{missing}");

    // A user's extractor: only `word` is an argument, and a key named like the extractor is
    // refused as unknown (it is not part of the input).
    let schema = GreetTool.input_schema();
    assert_eq!(schema["required"], json!(["word"]));
    assert!(schema["properties"].get("caller").is_none(), "{schema}");
    let out = GreetTool
        .call(
            json!({"word": "Hi"}),
            &ToolContext::default().with_session_id("ada"),
        )
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!({"text": "Hi, ada"})));
    let unknown = GreetTool
        .call(
            json!({"word": "Hi", "caller": "x"}),
            &ToolContext::default().with_session_id("ada"),
        )
        .await
        .unwrap_err();
    assert!(
        unknown.to_string().contains("unknown field `caller`"),
        "{unknown}"
    );
    // The extractor's error fails the call.
    let failed = GreetTool
        .call(
            json!({"word": "Hi"}),
            &ToolContext::default().with_session_id(""),
        )
        .await
        .unwrap_err();
    assert!(failed.to_string().contains("no session"), "{failed}");
}

#[tokio::test]
async fn a_borrowed_extractor_declares_the_state_it_needs() {
    let schema = DoubleTool.input_schema();
    assert_eq!(schema["required"], json!(["n"]), "{schema}");
    let required = DoubleTool.required_state();
    assert_eq!(required.len(), 1);
    assert_eq!(required[0].type_id, std::any::TypeId::of::<Limits>());
    let mut state = StateMap::new();
    state.insert(std::sync::Arc::new(0u8)); // another type: not the limits
    let missing = DoubleTool
        .call(json!({"n": 2}), &ToolContext::default().with_state(state))
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("no limits"), "{missing}");

    let mut state = StateMap::new();
    state.insert(Limits { max: 10 });
    let ctx = ToolContext::default().with_state(state);
    let out = DoubleTool.call(json!({"n": 2}), &ctx).await.unwrap();
    assert_eq!(out.to_text(), "4");
    let over = DoubleTool.call(json!({"n": 6}), &ctx).await.unwrap_err();
    assert!(over.to_string().contains("over the limit of 10"), "{over}");
}

/// What a crate of tools must not compile: the agent runtime's storage, parsers, HTTP and TLS.
const HEAVY: [&str; 8] = [
    "rusqlite",
    "tree-sitter",
    "reqwest",
    "rustls",
    "aws-lc-rs",
    "aws-lc-sys",
    "tokio-postgres",
    "rmcp",
];

#[test]
fn the_dependency_tree_has_none_of_the_runtime_crates() {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}", "--manifest-path", manifest])
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8(output.stdout).unwrap();
    let packages: BTreeSet<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(packages.contains("tool-sdk-core"), "{tree}");
    assert!(!packages.contains("tool-sdk"), "{tree}");
    for heavy in HEAVY {
        assert!(!packages.contains(heavy), "{heavy} is in the tree:\n{tree}");
    }
}
