//! Runs the built-in Grep or Glob tool once, in-process, and prints what the model would get:
//! `searchbench grep|glob ROOT 'JSON input'`. `bench/run` times it with hyperfine beside `rg`,
//! GNU grep and `fd`, and compares the results.

use serde_json::Value;
use tool_sdk::builtin::{GlobTool, GrepTool};
use tool_sdk::{Tool, ToolContext};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, which, root, input] = args.as_slice() else {
        eprintln!("usage: searchbench grep|glob ROOT 'JSON input'");
        std::process::exit(2);
    };
    let input: Value = serde_json::from_str(input).expect("the input is JSON");
    let tool: Box<dyn Tool> = match which.as_str() {
        "grep" => Box::new(GrepTool),
        "glob" => Box::new(GlobTool),
        other => panic!("unknown tool {other}"),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let ctx = ToolContext::new(root);
    let output = match runtime.block_on(tool.call(input, &ctx)) {
        Ok(output) => output,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    if output.is_error {
        eprintln!("{}", output.to_text());
        std::process::exit(1);
    }
    println!("{}", output.to_text());
}
