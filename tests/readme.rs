//! The README's code blocks that rustdoc does not compile: its quickstart must be
//! `examples/quickstart.rs` word for word, and its configuration file must load.
//! (The Rust blocks are doctests: `tool-sdk/src/lib.rs` includes the README.)

use tool_sdk::agent::AgentConfig;

const README: &str = include_str!("../README.md");

/// The fenced blocks whose info string starts with `lang`, in order.
fn blocks(lang: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in README.lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(info)) if info.split(',').next() == Some(lang) => {
                current = Some(String::new())
            }
            (Some(block), Some(_)) => {
                found.push(std::mem::take(block));
                current = None;
            }
            (Some(block), None) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    found
}

#[test]
fn the_quickstart_block_is_the_quickstart_example() {
    let example = include_str!("../examples/quickstart.rs");
    let code: String = example
        .lines()
        .filter(|line| !line.starts_with("//!"))
        .skip_while(|line| line.is_empty())
        .map(|line| format!("{line}\n"))
        .collect();
    let rust = blocks("rust");
    assert!(
        rust.contains(&code),
        "the README's quickstart differs from examples/quickstart.rs; copy the example's code \
         (without its //! lines) into the README"
    );
}

#[test]
fn the_configuration_file_reference_loads_and_means_what_it_says() {
    let toml_blocks = blocks("toml");
    assert_eq!(toml_blocks.len(), 1, "one configuration reference");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.toml");
    std::fs::write(&path, &toml_blocks[0]).unwrap();
    let config = AgentConfig::from_file(&path).unwrap();
    // The values it shows are the defaults it claims.
    let defaults = AgentConfig::default();
    assert_eq!(config.max_turns, defaults.max_turns);
    assert_eq!(config.max_tokens, defaults.max_tokens);
    assert_eq!(config.tool_timeout, defaults.tool_timeout);
    assert_eq!(config.max_tool_timeout, defaults.max_tool_timeout);
    assert_eq!(config.max_concurrent_tools, defaults.max_concurrent_tools);
    assert_eq!(config.max_result_chars, defaults.max_result_chars);
    assert_eq!(config.coerce_inputs, defaults.coerce_inputs);
    assert_eq!(config.permission_mode, defaults.permission_mode);
    assert_eq!(config.permissions.deny.len(), 2);
    assert_eq!(
        config.subagents["reviewer"].tools.as_ref().unwrap().len(),
        3
    );
    assert_eq!(config.model.unwrap().id, "claude-sonnet-4-5");
}
