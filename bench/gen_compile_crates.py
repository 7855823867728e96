#!/usr/bin/env python3
"""Writes three crates of 100 tools each, the same tools, for the compile-time benchmark:
one with tool-sdk's #[tool], one with the same #[tool] on tool-sdk-core alone (the small crate
for crates that only define tools), one with rmcp's #[tool_router]/#[tool] (a Parameters
struct per tool, as rmcp wants); COMPILE_TOOLS=n writes n tools instead.
Usage: gen_compile_crates.py OUT_DIR REPO_ROOT
           gen_compile_crates.py --touch CRATE_DIR N   (edits tool N's body, for incremental)
"""
import os
import re
import sys

N = int(os.environ.get("COMPILE_TOOLS", "100"))
# Distinct names for distinct sizes: crates of one name share their outputs in one target dir.
PACKAGE = "hundred-tools" if N == 100 else f"tools-{N}"

OURS_TOOL = '''
/// Looks something up (tool {i}).
#[tool(read_only)]
pub async fn tool_{i:03}(
    /// The path to look at.
    path: String,
    /// How many entries at most.
    count: Option<u32>,
    /// Where to start.
    #[arg(default = 10)]
    limit: u64,
    /// Whether to recurse.
    recursive: bool,
    /// Extra tags.
    tags: Vec<String>,
) -> String {{
    format!("{i}/0 {{path}} {{count:?}} {{limit}} {{recursive}} {{}}", tags.len())
}}
'''

RMCP_TOOL = '''
/// The arguments of tool {i}.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args{i:03} {{
    /// The path to look at.
    pub path: String,
    /// How many entries at most.
    pub count: Option<u32>,
    /// Where to start.
    #[serde(default = "ten")]
    pub limit: u64,
    /// Whether to recurse.
    pub recursive: bool,
    /// Extra tags.
    pub tags: Vec<String>,
}}
'''

RMCP_METHOD = '''
    /// Looks something up (tool {i}).
    #[tool(annotations(read_only_hint = true))]
    pub async fn tool_{i:03}(&self, Parameters(a): Parameters<Args{i:03}>) -> String {{
        format!("{i}/0 {{}} {{:?}} {{}} {{}} {{}}", a.path, a.count, a.limit, a.recursive, a.tags.len())
    }}
'''


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def generate(out, repo):
    ours = os.path.join(out, "ours")
    write(os.path.join(ours, "Cargo.toml"), f'''[package]
name = "{PACKAGE}-ours"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
tool-sdk = {{ path = "{repo}/tool-sdk" }}
''')
    body = f"//! {N} tools with tool-sdk's #[tool].\n#![allow(missing_docs)]\n\nuse tool_sdk::tool;\n"
    body += "".join(OURS_TOOL.format(i=i) for i in range(N))
    write(os.path.join(ours, "src", "lib.rs"), body)

    # The same tools on tool-sdk-core alone: what a crate that only defines tools depends on.
    core = os.path.join(out, "core")
    write(os.path.join(core, "Cargo.toml"), f'''[package]
name = "{PACKAGE}-core"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
tool-sdk-core = {{ path = "{repo}/tool-sdk-core" }}
''')
    write(os.path.join(core, "src", "lib.rs"), body.replace("use tool_sdk::tool;", "use tool_sdk_core::tool;"))

    rmcp = os.path.join(out, "rmcp")
    write(os.path.join(rmcp, "Cargo.toml"), f'''[package]
name = "{PACKAGE}-rmcp"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
rmcp = {{ version = "=3.9.0", default-features = false, features = ["server", "macros"] }}
schemars = "1"
serde = {{ version = "1", features = ["derive"] }}
''')
    body = (f"//! The same {N} tools with rmcp's #[tool_router] and #[tool].\n#![allow(missing_docs)]\n\n"
            "use rmcp::handler::server::wrapper::Parameters;\nuse schemars::JsonSchema;\n"
            "use rmcp::{ServerHandler, tool, tool_router};\nuse serde::Deserialize;\n\n"
            "fn ten() -> u64 {\n    10\n}\n")
    body += "".join(RMCP_TOOL.format(i=i) for i in range(N))
    body += "\n/// The server.\n#[derive(Clone)]\npub struct Server;\n\n#[tool_router]\nimpl Server {"
    body += "".join(RMCP_METHOD.format(i=i) for i in range(N))
    body += "}\n\nimpl ServerHandler for Server {}\n"
    write(os.path.join(rmcp, "src", "lib.rs"), body)


def touch(crate, n):
    """Bumps the edit counter in tool n's format string: a real change to one tool's body."""
    path = os.path.join(crate, "src", "lib.rs")
    text = open(path).read()
    pattern = re.compile(r'format!\("%d/(\d+) ' % n)
    text, count = pattern.subn(lambda m: 'format!("%d/%d ' % (n, int(m.group(1)) + 1), text)
    assert count == 1, f"tool {n} not found in {path}"
    open(path, "w").write(text)


if __name__ == "__main__":
    if sys.argv[1] == "--touch":
        touch(sys.argv[2], int(sys.argv[3]))
    else:
        generate(sys.argv[1], os.path.abspath(sys.argv[2]))
