//! The README's code blocks that rustdoc does not compile: its quickstart must be
//! `examples/quickstart.rs` word for word, its configuration file must load, its
//! `[dependencies]` block must have what its examples use. And what it must show.
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
    let toml_blocks: Vec<String> = blocks("toml")
        .into_iter()
        .filter(|block| !block.starts_with("[dependencies]"))
        .collect();
    assert_eq!(toml_blocks.len(), 1, "one configuration reference");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.toml");
    std::fs::write(&path, &toml_blocks[0]).unwrap();
    let config = AgentConfig::from_file(&path).unwrap();
    // The values it shows are the defaults it claims.
    let defaults = AgentConfig::default();
    assert_eq!(config.limits, defaults.limits);
    assert_eq!(config.model.max_tokens, defaults.model.max_tokens);
    assert_eq!(config.model.prompt_caching, defaults.model.prompt_caching);
    assert_eq!(config.coerce_inputs, defaults.coerce_inputs);
    assert_eq!(config.permissions.mode, defaults.permissions.mode);
    assert_eq!(config.permissions.rules.deny.len(), 2);
    assert_eq!(config.context, defaults.context);
    assert_eq!(
        config.subagents["reviewer"].tools.as_ref().unwrap().len(),
        3
    );
    match config.model.source {
        Some(tool_sdk::agent::ModelSource::Spec(spec)) => assert_eq!(spec.id, "claude-sonnet-4-5"),
        other => panic!("the [model] table names a model: {other:?}"),
    }
}

/// The README's `[dependencies]` block, parsed.
fn dependencies_block() -> toml::Table {
    let block = blocks("toml")
        .into_iter()
        .find(|block| block.starts_with("[dependencies]"))
        .expect("a [dependencies] block for a new crate");
    let manifest: toml::Table = block.parse().expect("the block is valid TOML");
    manifest["dependencies"].as_table().unwrap().clone()
}

#[test]
fn the_dependencies_block_has_every_crate_the_examples_use() {
    let dependencies = dependencies_block();
    let workspace: toml::Table = include_str!("../Cargo.toml").parse().unwrap();
    let workspace_deps = workspace["workspace"]["dependencies"].as_table().unwrap();
    let version = |spec: &toml::Value| -> String {
        match spec {
            toml::Value::String(version) => version.clone(),
            other => other["version"].as_str().unwrap_or_default().to_owned(),
        }
    };
    let features = |spec: &toml::Value| -> Vec<String> {
        spec.get("features")
            .and_then(toml::Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|f| f.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };

    // tool-sdk from where the workspace says it lives.
    assert_eq!(
        dependencies["tool-sdk"]["git"].as_str(),
        workspace["workspace"]["package"]["repository"].as_str()
    );
    // The others at the versions the workspace builds with.
    for (name, spec) in &dependencies {
        if name != "tool-sdk" {
            assert_eq!(version(spec), version(&workspace_deps[name]), "{name}");
        }
    }
    // `#[tokio::main]` needs the macros and the multi-threaded runtime; input types derive
    // Deserialize. JsonSchema comes from tool-sdk, so schemars is not a dependency.
    let tokio = features(&dependencies["tokio"]);
    assert!(tokio.contains(&"macros".to_owned()), "{tokio:?}");
    assert!(tokio.contains(&"rt-multi-thread".to_owned()), "{tokio:?}");
    assert!(features(&dependencies["serde"]).contains(&"derive".to_owned()));
    assert!(!dependencies.contains_key("schemars"));

    // Every crate the README's Rust code names is in the block.
    let crate_names: Vec<String> = dependencies
        .keys()
        .map(|name| name.replace('-', "_"))
        .collect();
    for block in blocks("rust") {
        for root in path_roots(&block) {
            // Lower-case path roots are crates, or modules brought in by a `use` (such as
            // `tool_sdk::mcp` used as `mcp::serve_stdio`).
            let imported = block.contains(&format!("::{root};"))
                || block.contains(&format!("::{root},"))
                || block.contains(&format!("{{{root},"));
            if root.starts_with(|c: char| c.is_ascii_lowercase())
                && !["std", "crate", "self", "super"].contains(&root)
                && !imported
            {
                assert!(
                    crate_names.contains(&root.to_owned()),
                    "`{root}` in:\n{block}"
                );
            }
        }
    }
}

/// The first segments of the paths in `code`: `serde_json` in `serde_json::json!`, not
/// `collect` in `.collect::<T>()` nor `b` in `a::b::c`.
fn path_roots(code: &str) -> Vec<&str> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices("::")
        .filter_map(|(at, _)| {
            let before = &code[..at];
            let start = before.trim_end_matches(is_ident).len();
            let root = &before[start..];
            let preceded_by = before[..start].chars().next_back();
            (!root.is_empty() && !matches!(preceded_by, Some('.' | ':'))).then_some(root)
        })
        .collect()
}

#[test]
fn app_state_is_shown_with_the_call_that_gives_it_to_the_agent() {
    assert!(
        blocks("rust")
            .iter()
            .any(|block| block.contains("State<") && block.contains(".with_state(")),
        "a Rust block with a State<T> parameter and AgentConfig::with_state"
    );
}

#[test]
fn a_second_prompt_on_the_same_agent_is_shown() {
    assert!(
        blocks("rust")
            .iter()
            .any(|block| block.matches("agent.prompt(").count() >= 2),
        "a Rust block that prompts one agent twice"
    );
}

#[test]
fn the_demo_instructions_say_answers_end_with_enter() {
    let paragraph = README
        .split("\n\n")
        .find(|paragraph| paragraph.contains("`y`") && paragraph.contains("`n`"))
        .expect("the paragraph on the demo's question");
    assert!(paragraph.contains("Enter"), "{paragraph}");
}

#[test]
fn the_otlp_line_is_the_doctest_of_init_otlp() {
    // The README's block cannot be a doctest (it needs the `otel` feature); the doc of
    // `init_otlp`, compiled with the feature, runs the same line.
    let block = blocks("rust")
        .into_iter()
        .find(|block| block.contains("init_otlp("))
        .expect("the README shows init_otlp");
    let line = block.lines().find(|l| l.contains("init_otlp(")).unwrap();
    let telemetry = include_str!("../tool-sdk/src/telemetry.rs");
    assert!(telemetry.contains(&format!("/// {line}\n")), "{line}");
}

/// The first `//!` block of a source file, without the `//! ` markers.
fn module_doc(source: &str) -> String {
    source
        .lines()
        .skip_while(|line| !line.starts_with("//!"))
        .take_while(|line| line.starts_with("//!"))
        .map(|line| line.trim_start_matches("//!").trim_start())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_rustdoc_front_pages_show_an_agent_and_the_dependencies_and_speak_to_users() {
    let front = module_doc(include_str!("../tool-sdk/src/lib.rs"));
    assert!(front.contains("Agent::create("), "{front}");
    // The same [dependencies] lines as the README's, so one cannot go stale alone.
    let start = front.find("[dependencies]").expect("Cargo.toml lines");
    let block: toml::Table = front[start..].split("```").next().unwrap().parse().unwrap();
    assert_eq!(
        block["dependencies"].as_table().unwrap(),
        &dependencies_block()
    );

    // The agent page opens for users: notes for maintainers are plain comments.
    let agent = module_doc(include_str!("../tool-sdk/src/agent/mod.rs"));
    assert!(agent.contains("Agent::create"), "{agent}");
    assert!(!agent.contains("merged doctests"), "{agent}");

    // A re-export's docs are shown inlined, where intra-doc links render as `[...]`.
    let lib = include_str!("../tool-sdk/src/lib.rs");
    let reexport = lib.find("pub use schemars::JsonSchema;").unwrap();
    let its_doc = lib[..reexport]
        .lines()
        .rev()
        .take_while(|l| l.starts_with("///"));
    for line in its_doc {
        assert!(!line.contains("[`schemars`]"), "{line}");
    }
}

#[test]
fn the_readme_says_what_the_crate_has_and_how_big_the_coder_is() {
    let compares = README
        .split("## How it compares")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap();
    assert!(!compares.contains("does **not** yet compact"), "{compares}");
    assert!(
        compares.contains("compacts long conversations"),
        "{compares}"
    );
    assert!(compares.contains("before a\n  compaction"), "{compares}");

    // `get_tools` is introduced with what it returns.
    let get_tools = README.find("get_tools(Some(").unwrap();
    assert!(README[get_tools..get_tools + 200].contains("`Result`"));

    // The coder's size, as the README states it, within a tenth of the real count.
    let lines: usize = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/coder"))
        .unwrap()
        .map(|entry| {
            std::fs::read_to_string(entry.unwrap().path())
                .unwrap()
                .lines()
                .count()
        })
        .sum();
    let said = README
        .split("`examples/coder/` is about ")
        .nth(1)
        .and_then(|rest| rest.split(" lines").next())
        .expect("the README states the coder's size");
    let said: usize = said.replace(',', "").parse().unwrap();
    assert!(
        said.abs_diff(lines) * 10 <= lines,
        "the README says {said} lines, the coder has {lines}"
    );
}
