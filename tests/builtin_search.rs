//! The Glob and Grep built-ins through a `ToolRegistry`, on a real temp tree with a
//! .gitignore, an .ignore, hidden files, a binary file, nested directories and controlled
//! modification times; and, when `rg` is on PATH, against ripgrep itself on the same tree and
//! on larger real trees.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tool_sdk::builtin::{GlobTool, GrepTool};
use tool_sdk::{CancellationToken, Tool, ToolContext, ToolError, ToolErrorKind, ToolRegistry};

// ---- the tree ----

/// A temp tree; `rel` paths are relative to its root.
struct Tree {
    dir: tempfile::TempDir,
    root: PathBuf,
}

const BASE: u64 = 1_700_000_000;

impl Tree {
    fn empty() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        // Canonical, so the tool's paths and ours agree even where the temp dir is a symlink.
        let root = dir.path().canonicalize().unwrap();
        Tree { dir, root }
    }

    /// Writes `rel`, modified `age` seconds after `BASE`.
    fn file(&self, rel: &str, contents: impl AsRef<[u8]>, age: u64) -> &Tree {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(BASE + age))
            .unwrap();
        self
    }

    fn path(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    fn paths(&self, rels: &[&str]) -> Vec<String> {
        rels.iter().map(|rel| self.path(rel)).collect()
    }

    fn ctx(&self) -> ToolContext {
        ToolContext::new(&self.root)
    }
}

/// The standard tree. Newest first: src/nested/deep.rs, src/lib.rs, notes.md, a.rs, ...
fn tree() -> Tree {
    let tree = Tree::empty();
    tree.file(".gitignore", "ignored/\n*.log\n", 0)
        .file(".ignore", "secret.txt\n", 0)
        .file(
            "a.rs",
            "fn main() {\n    println!(\"hello\");\n}\n\n// Hello again\n",
            30,
        )
        .file(
            "b.txt",
            "one\ntwo hello\nthree\nfour\nfive\nsix\nhello seven\neight\n",
            20,
        )
        .file("notes.md", "# Notes\nsay HELLO loudly\n", 40)
        .file("debug.log", "hello from a log\n", 90)
        .file("secret.txt", "hello secret\n", 90)
        .file("ignored/x.rs", "fn hello() {}\n", 90)
        .file(".hidden/h.rs", "fn hello() {}\n", 90)
        .file(".dotfile", "hello dot\n", 90)
        .file("bin.dat", b"hello\x00world\n", 90)
        .file("src/lib.rs", "pub fn hello() -> u8 {\n    1\n}\n", 50)
        .file(
            "src/nested/deep.rs",
            "struct Deep {\n    field: u8,\n}\n\nfn hello_deep() {}\n",
            60,
        )
        .file("web/app.ts", "const hello = 1;\n", 10)
        .file("web/app.tsx", "const Hello = () => null;\n", 5);
    tree
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(GlobTool)).unwrap();
    registry.register(Arc::new(GrepTool)).unwrap();
    registry
}

async fn run(tool: &str, input: Value, ctx: &ToolContext) -> Result<String, ToolError> {
    let output = registry().execute(tool, input, ctx).await?;
    assert!(!output.is_error, "{}", output.to_text());
    Ok(output.to_text().into_owned())
}

async fn ok(tool: &str, input: Value, tree: &Tree) -> String {
    match run(tool, input.clone(), &tree.ctx()).await {
        Ok(text) => text,
        Err(error) => panic!("{tool} {input} failed: {error}"),
    }
}

async fn err(tool: &str, input: Value, tree: &Tree) -> ToolError {
    match run(tool, input.clone(), &tree.ctx()).await {
        Ok(text) => panic!("{tool} {input} succeeded: {text}"),
        Err(error) => error,
    }
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

// ---- schemas ----

#[test]
fn schemas_use_claude_code_names() {
    assert_eq!(GlobTool.name(), "Glob");
    assert_eq!(GrepTool.name(), "Grep");
    for tool in [&GlobTool as &dyn Tool, &GrepTool] {
        assert!(tool.is_read_only());
        assert_eq!(tool.category(), Some("builtin"));
    }
    let glob = GlobTool.input_schema();
    assert_eq!(glob["required"], json!(["pattern"]), "{glob}");
    let grep = GrepTool.input_schema();
    assert_eq!(grep["required"], json!(["pattern"]), "{grep}");
    let properties: BTreeSet<&str> = grep["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let expected: BTreeSet<&str> = [
        "pattern",
        "path",
        "glob",
        "type",
        "output_mode",
        "-A",
        "-B",
        "-C",
        "-n",
        "-i",
        "multiline",
        "head_limit",
        "offset",
    ]
    .into();
    assert_eq!(properties, expected);
    assert_eq!(grep["properties"]["head_limit"]["default"], json!(250));
    assert_eq!(grep["properties"]["-n"]["default"], json!(true));
    let modes = grep.to_string();
    for mode in ["content", "files_with_matches", "count"] {
        assert!(modes.contains(&format!("\"{mode}\"")), "{modes}");
    }
}

// ---- Glob ----

#[tokio::test]
async fn glob_lists_newest_first_and_skips_ignored_and_hidden_files() {
    let tree = tree();
    let out = ok("Glob", json!({"pattern": "**/*.rs"}), &tree).await;
    assert_eq!(
        lines(&out),
        tree.paths(&["src/nested/deep.rs", "src/lib.rs", "a.rs"])
    );
}

#[tokio::test]
async fn glob_star_stays_in_one_directory_and_path_sets_the_base() {
    let tree = tree();
    let out = ok("Glob", json!({"pattern": "*.rs"}), &tree).await;
    assert_eq!(lines(&out), tree.paths(&["a.rs"]));
    let out = ok("Glob", json!({"pattern": "*.rs", "path": "src"}), &tree).await;
    assert_eq!(lines(&out), tree.paths(&["src/lib.rs"]));
    let src = tree.path("src");
    let out = ok("Glob", json!({"pattern": "**/*.rs", "path": src}), &tree).await;
    assert_eq!(
        lines(&out),
        tree.paths(&["src/nested/deep.rs", "src/lib.rs"])
    );
    let out = ok("Glob", json!({"pattern": "web/*.{ts,tsx}"}), &tree).await;
    assert_eq!(lines(&out), tree.paths(&["web/app.ts", "web/app.tsx"]));
    let out = ok("Glob", json!({"pattern": "./src/**/deep.?s"}), &tree).await;
    assert_eq!(lines(&out), tree.paths(&["src/nested/deep.rs"]));
}

#[tokio::test]
async fn glob_reaches_hidden_and_ignored_files_only_when_pointed_at_them() {
    let tree = tree();
    // Skipped on a walk from the root...
    let out = ok("Glob", json!({"pattern": "**/h.rs"}), &tree).await;
    assert_eq!(out, "No files found");
    // ...but a hidden directory given as `path` is searched, as rg searches it.
    let out = ok("Glob", json!({"pattern": "*.rs", "path": ".hidden"}), &tree).await;
    assert_eq!(lines(&out), tree.paths(&[".hidden/h.rs"]));
}

#[tokio::test]
async fn glob_breaks_ties_by_path_and_caps_at_100_with_a_note() {
    let tree = Tree::empty();
    for i in 0..130 {
        // Pairs share a modification time.
        tree.file(&format!("f{i:03}.txt"), "x", i / 2);
    }
    let out = ok("Glob", json!({"pattern": "*.txt"}), &tree).await;
    let all = lines(&out);
    assert_eq!(all.len(), 101, "{out}");
    assert_eq!(all[0], tree.path("f128.txt"));
    assert_eq!(all[1], tree.path("f129.txt"));
    assert_eq!(all[2], tree.path("f126.txt"));
    assert_eq!(all[99], tree.path("f031.txt"));
    assert!(all[100].contains("30 more files"), "{out}");
}

#[tokio::test]
async fn glob_without_matches_is_not_an_error() {
    let tree = tree();
    let out = ok("Glob", json!({"pattern": "**/*.java"}), &tree).await;
    assert_eq!(out, "No files found");
}

#[tokio::test]
async fn glob_errors() {
    let tree = tree();
    let error = err("Glob", json!({"pattern": "*", "path": "nope"}), &tree).await;
    assert_eq!(error.kind(), ToolErrorKind::NotFound, "{error}");
    assert!(error.to_string().contains("nope"), "{error}");
    let error = err("Glob", json!({"pattern": "*", "path": "a.rs"}), &tree).await;
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput, "{error}");
    let error = err("Glob", json!({"pattern": "src/{a,"}), &tree).await;
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput, "{error}");
    let error = err("Glob", json!({"path": "src"}), &tree).await;
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput, "{error}");
}

#[tokio::test]
async fn glob_and_grep_stop_when_cancelled() {
    let tree = tree();
    let token = CancellationToken::new();
    token.cancel();
    let ctx = tree.ctx().with_cancellation(token);
    for (tool, input) in [
        ("Glob", json!({"pattern": "**/*"})),
        ("Grep", json!({"pattern": "hello"})),
    ] {
        let error = run(tool, input, &ctx).await.unwrap_err();
        assert_eq!(error, ToolError::Cancelled);
    }
}

// ---- Grep ----

#[tokio::test]
async fn grep_lists_matching_files_newest_first() {
    let tree = tree();
    let out = ok("Grep", json!({"pattern": "hello"}), &tree).await;
    // Not debug.log, secret.txt, ignored/, hidden files or the binary bin.dat; web/app.tsx
    // has only `Hello`.
    let mut expected = vec!["Found 5 files".to_owned()];
    expected.extend(tree.paths(&[
        "src/nested/deep.rs",
        "src/lib.rs",
        "a.rs",
        "b.txt",
        "web/app.ts",
    ]));
    assert_eq!(lines(&out), expected);
    let out = ok("Grep", json!({"pattern": "nothing like this"}), &tree).await;
    assert_eq!(out, "No files found");
}

#[tokio::test]
async fn grep_content_with_and_without_line_numbers() {
    let tree = tree();
    let input = json!({"pattern": "hel+o", "output_mode": "content", "path": "b.txt"});
    let out = ok("Grep", input, &tree).await;
    let b = tree.path("b.txt");
    assert_eq!(
        lines(&out),
        [format!("{b}:2:two hello"), format!("{b}:7:hello seven")]
    );
    let input = json!({"pattern": "hello", "output_mode": "content", "-n": false, "glob": "b.*"});
    let out = ok("Grep", input, &tree).await;
    assert_eq!(
        lines(&out),
        [format!("{b}:two hello"), format!("{b}:hello seven")]
    );
    // Across files: sorted by path.
    let input = json!({"pattern": "fn hello", "output_mode": "content"});
    let out = ok("Grep", input, &tree).await;
    assert_eq!(
        lines(&out),
        [
            format!("{}:1:pub fn hello() -> u8 {{", tree.path("src/lib.rs")),
            format!("{}:5:fn hello_deep() {{}}", tree.path("src/nested/deep.rs")),
        ]
    );
}

#[tokio::test]
async fn grep_context_lines_and_separators_like_rg() {
    let tree = tree();
    let b = tree.path("b.txt");
    let input = json!({"pattern": "hello", "output_mode": "content", "path": "b.txt", "-A": 1});
    let out = ok("Grep", input, &tree).await;
    assert_eq!(
        lines(&out),
        [
            format!("{b}:2:two hello"),
            format!("{b}-3-three"),
            "--".to_owned(),
            format!("{b}:7:hello seven"),
            format!("{b}-8-eight"),
        ]
    );
    let input = json!({"pattern": "hello", "output_mode": "content", "path": "b.txt", "-B": 2});
    let out = ok("Grep", input, &tree).await;
    assert_eq!(
        lines(&out),
        [
            format!("{b}-1-one"),
            format!("{b}:2:two hello"),
            "--".to_owned(),
            format!("{b}-5-five"),
            format!("{b}-6-six"),
            format!("{b}:7:hello seven"),
        ]
    );
    // -C 2 makes the groups touch: no separator. -A overrides -C after the match.
    let input =
        json!({"pattern": "hello", "output_mode": "content", "path": "b.txt", "-C": 2, "-A": 0});
    let out = ok("Grep", input, &tree).await;
    assert_eq!(
        lines(&out),
        [
            format!("{b}-1-one"),
            format!("{b}:2:two hello"),
            "--".to_owned(),
            format!("{b}-5-five"),
            format!("{b}-6-six"),
            format!("{b}:7:hello seven"),
        ]
    );
    let input = json!({"pattern": "hello", "output_mode": "content", "path": "b.txt", "-C": 2});
    let out = ok("Grep", input, &tree).await;
    assert_eq!(lines(&out).len(), 8, "{out}");
    assert!(!out.contains("\n--\n"), "{out}");
    // Between files, too.
    let input =
        json!({"pattern": "^fn", "output_mode": "content", "type": "rust", "-A": 1, "-n": false});
    let out = ok("Grep", input, &tree).await;
    let (a, deep) = (tree.path("a.rs"), tree.path("src/nested/deep.rs"));
    assert_eq!(
        lines(&out),
        [
            format!("{a}:fn main() {{"),
            format!("{a}-    println!(\"hello\");"),
            "--".to_owned(),
            format!("{deep}:fn hello_deep() {{}}"),
        ]
    );
}

#[tokio::test]
async fn grep_counts_matching_lines() {
    let tree = tree();
    let out = ok(
        "Grep",
        json!({"pattern": "hello|Hello", "output_mode": "count"}),
        &tree,
    )
    .await;
    let mut expected = vec![
        format!("{}:2", tree.path("a.rs")),
        format!("{}:2", tree.path("b.txt")),
        format!("{}:1", tree.path("src/lib.rs")),
        format!("{}:1", tree.path("src/nested/deep.rs")),
        format!("{}:1", tree.path("web/app.ts")),
        format!("{}:1", tree.path("web/app.tsx")),
    ];
    expected.push(String::new());
    expected.push("Found 8 total matches across 6 files.".to_owned());
    assert_eq!(lines(&out), expected);
}

#[tokio::test]
async fn grep_case_insensitive() {
    let tree = tree();
    let input = json!({"pattern": "hello", "-i": true, "glob": "*.md", "output_mode": "content"});
    let out = ok("Grep", input, &tree).await;
    assert_eq!(
        lines(&out),
        [format!("{}:2:say HELLO loudly", tree.path("notes.md"))]
    );
    let out = ok("Grep", json!({"pattern": "hello", "glob": "*.md"}), &tree).await;
    assert_eq!(out, "No files found");
}

#[tokio::test]
async fn grep_filters_by_type_and_glob() {
    let tree = tree();
    let files =
        |out: &str| -> BTreeSet<String> { out.lines().skip(1).map(str::to_owned).collect() };
    let set = |rels: &[&str]| -> BTreeSet<String> { tree.paths(rels).into_iter().collect() };

    let out = ok("Grep", json!({"pattern": "hello", "type": "rust"}), &tree).await;
    assert_eq!(
        files(&out),
        set(&["a.rs", "src/lib.rs", "src/nested/deep.rs"])
    );
    let out = ok("Grep", json!({"pattern": "(?i)hello", "type": "ts"}), &tree).await;
    assert_eq!(files(&out), set(&["web/app.ts", "web/app.tsx"]));
    let out = ok(
        "Grep",
        json!({"pattern": "(?i)hello", "glob": "*.{ts,tsx}"}),
        &tree,
    )
    .await;
    assert_eq!(files(&out), set(&["web/app.ts", "web/app.tsx"]));
    // As with `rg --glob`, a glob that names a file beats the ignore files (secret.txt).
    let out = ok(
        "Grep",
        json!({"pattern": "(?i)hello", "glob": "*.md, *.txt"}),
        &tree,
    )
    .await;
    assert_eq!(files(&out), set(&["notes.md", "b.txt", "secret.txt"]));
    let out = ok(
        "Grep",
        json!({"pattern": "(?i)hello", "glob": "!*.rs !web/**"}),
        &tree,
    )
    .await;
    assert_eq!(files(&out), set(&["notes.md", "b.txt"]));
    let out = ok(
        "Grep",
        json!({"pattern": "hello", "glob": "src/**/*.rs"}),
        &tree,
    )
    .await;
    assert_eq!(files(&out), set(&["src/lib.rs", "src/nested/deep.rs"]));
    let out = ok(
        "Grep",
        json!({"pattern": "hello", "path": "src", "type": "rust", "glob": "deep*"}),
        &tree,
    )
    .await;
    assert_eq!(files(&out), set(&["src/nested/deep.rs"]));

    let error = err("Grep", json!({"pattern": "x", "type": "nosuchtype"}), &tree).await;
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput, "{error}");
    assert!(error.to_string().contains("nosuchtype"), "{error}");
}

#[tokio::test]
async fn grep_multiline_spans_lines() {
    let tree = tree();
    let input = json!({"pattern": "struct Deep \\{.*field", "output_mode": "content"});
    assert_eq!(ok("Grep", input, &tree).await, "No matches found");
    let input =
        json!({"pattern": "struct Deep \\{.*field", "output_mode": "content", "multiline": true});
    let deep = tree.path("src/nested/deep.rs");
    assert_eq!(
        lines(&ok("Grep", input, &tree).await),
        [
            format!("{deep}:1:struct Deep {{"),
            format!("{deep}:2:    field: u8,")
        ]
    );
    let input = json!({"pattern": "u8,\\n\\}", "multiline": true, "output_mode": "count"});
    let out = ok("Grep", input, &tree).await;
    assert!(out.starts_with(&format!("{deep}:1\n")), "{out}");
    // Without multiline, `\n` is refused with a hint, as rg refuses it.
    let error = err("Grep", json!({"pattern": "u8,\\n\\}"}), &tree).await;
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput, "{error}");
    assert!(error.to_string().contains("multiline"), "{error}");
}

#[tokio::test]
async fn grep_pages_with_head_limit_and_offset() {
    let tree = Tree::empty();
    for i in 0..300 {
        tree.file(&format!("f{i:03}.txt"), "needle\n", i);
    }
    // Default head_limit: 250, newest first.
    let out = ok("Grep", json!({"pattern": "needle"}), &tree).await;
    let all = lines(&out);
    assert_eq!(all[0], "Found 300 files");
    assert_eq!(all[1], tree.path("f299.txt"));
    assert_eq!(all[250], tree.path("f050.txt"));
    assert!(out.ends_with("(Showing entries 1-250 of 300. 50 more not shown: pass offset=250 to see them, or narrow the search.)"), "{out}");
    // 0 = unlimited.
    let out = ok("Grep", json!({"pattern": "needle", "head_limit": 0}), &tree).await;
    assert_eq!(lines(&out).len(), 301);
    assert!(!out.contains("Showing"), "{out}");
    // offset + head_limit.
    let out = ok(
        "Grep",
        json!({"pattern": "needle", "head_limit": 2, "offset": 10}),
        &tree,
    )
    .await;
    assert_eq!(
        lines(&out),
        [
            "Found 300 files".to_owned(),
            tree.path("f289.txt"),
            tree.path("f288.txt"),
            String::new(),
            "(Showing entries 11-12 of 300. 288 more not shown: pass offset=12 to see them, or narrow the search.)".to_owned(),
        ]
    );
    // The last page says where it starts but nothing more.
    let out = ok("Grep", json!({"pattern": "needle", "offset": 298}), &tree).await;
    assert!(
        out.ends_with("\n\n(Showing entries 299-300 of 300.)"),
        "{out}"
    );
    let out = ok("Grep", json!({"pattern": "needle", "offset": 400}), &tree).await;
    assert!(
        out.contains("No entries at offset 400: there are 300"),
        "{out}"
    );
    // Content lines and counts page too.
    let input = json!({"pattern": "needle", "output_mode": "content", "head_limit": 3});
    let out = ok("Grep", input, &tree).await;
    assert_eq!(
        lines(&out)[..3],
        [
            format!("{}:1:needle", tree.path("f000.txt")),
            format!("{}:1:needle", tree.path("f001.txt")),
            format!("{}:1:needle", tree.path("f002.txt")),
        ]
    );
    assert!(out.contains("297 more not shown"), "{out}");
    let input = json!({"pattern": "needle", "output_mode": "count", "head_limit": 1, "offset": 5});
    let out = ok("Grep", input, &tree).await;
    assert!(
        out.starts_with(&format!("{}:1\n", tree.path("f005.txt"))),
        "{out}"
    );
    assert!(out.contains("(Showing entries 6-6 of 300."), "{out}");
    assert!(
        out.ends_with("Found 300 total matches across 300 files."),
        "{out}"
    );
}

#[tokio::test]
async fn grep_cuts_very_long_lines() {
    let tree = Tree::empty();
    tree.file(
        "min.js",
        format!("{}needle{}\n", "a".repeat(10), "b".repeat(1000)),
        0,
    );
    let out = ok(
        "Grep",
        json!({"pattern": "needle", "output_mode": "content"}),
        &tree,
    )
    .await;
    assert!(out.ends_with(" [... 516 more characters]"), "{out}");
}

#[tokio::test]
async fn grep_errors() {
    let tree = tree();
    let error = err(
        "Grep",
        json!({"pattern": "fn (", "output_mode": "content"}),
        &tree,
    )
    .await;
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput, "{error}");
    assert!(error.to_string().contains("unclosed group"), "{error}");
    let error = err(
        "Grep",
        json!({"pattern": "x", "path": "missing/dir"}),
        &tree,
    )
    .await;
    assert_eq!(error.kind(), ToolErrorKind::NotFound, "{error}");
    let error = err(
        "Grep",
        json!({"pattern": "x", "output_mode": "lines"}),
        &tree,
    )
    .await;
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput, "{error}");
    let error = err("Grep", json!({"pattern": "x", "-A": -1}), &tree).await;
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput, "{error}");
}

#[tokio::test]
async fn grep_skips_binary_files_but_searches_named_ignored_files() {
    let tree = tree();
    let out = ok("Grep", json!({"pattern": "world"}), &tree).await;
    assert_eq!(out, "No files found");
    // A file named as `path` is searched even though .gitignore excludes it.
    let out = ok(
        "Grep",
        json!({"pattern": "hello", "path": "debug.log"}),
        &tree,
    )
    .await;
    assert_eq!(
        lines(&out),
        ["Found 1 file".to_owned(), tree.path("debug.log")]
    );
}

/// Binary files placed where ripgrep's handling shows: `bin.txt` has its NUL in the first
/// line buffer (64 KiB), `big.bin` after it, past thousands of matching lines.
fn binary_tree() -> Tree {
    let tree = Tree::empty();
    let mut big: Vec<u8> = (0..10_000)
        .flat_map(|i| format!("hello line {i}\n").into_bytes())
        .collect();
    big.extend_from_slice(b"\0tail hello\nhello after\n");
    tree.file(
        "bin.txt",
        b"hello one\nhello two\n\0hello three\nhello four\n",
        10,
    )
    .file("big.bin", big, 20)
    .file("text.txt", "hello plain\n", 30);
    tree
}

#[tokio::test]
async fn grep_searches_a_named_binary_file_as_rg_does() {
    let tree = binary_tree();
    let bin = tree.path("bin.txt");
    let named =
        |mode: &str, file: &str| json!({"pattern": "hello", "path": file, "output_mode": mode});

    // Listed, and said to be binary.
    let out = ok("Grep", named("files_with_matches", "bin.txt"), &tree).await;
    assert_eq!(
        lines(&out)[..2],
        ["Found 1 file".to_owned(), bin.clone()],
        "{out}"
    );
    assert!(out.contains("binary file"), "{out}");
    // Every match is counted: NUL bytes read as line breaks, the search goes on past them.
    let out = ok("Grep", named("count", "bin.txt"), &tree).await;
    assert_eq!(lines(&out)[0], format!("{bin}:4"), "{out}");
    assert!(out.contains("binary file"), "{out}");
    let out = ok("Grep", named("count", "big.bin"), &tree).await;
    assert_eq!(
        lines(&out)[0],
        format!("{}:10002", tree.path("big.bin")),
        "{out}"
    );
    // Lines of binary data are not shown: rg's message instead.
    let out = ok("Grep", named("content", "bin.txt"), &tree).await;
    assert_eq!(
        lines(&out),
        [format!(
            "{bin}: binary file matches (found \"\\0\" byte around offset 20)"
        )]
    );
    // Lines read before the binary data was seen are shown, then the message; nothing after
    // the NUL byte.
    let out = ok(
        "Grep",
        json!({"pattern": "hello", "path": "big.bin", "output_mode": "content", "head_limit": 0}),
        &tree,
    )
    .await;
    let shown = lines(&out);
    assert!(shown.len() > 1000, "{} lines", shown.len());
    assert_eq!(
        shown[shown.len() - 1],
        format!(
            "{}: binary file matches (found \"\\0\" byte around offset 158890)",
            tree.path("big.bin")
        )
    );
    assert!(
        shown[..shown.len() - 1]
            .iter()
            .all(|line| line.contains(":hello line "))
    );
}

#[tokio::test]
async fn grep_leaves_walked_binary_files_out_as_rg_does() {
    let tree = binary_tree();
    // No partial count for big.bin, whose NUL comes after thousands of matches.
    let out = ok(
        "Grep",
        json!({"pattern": "hello", "output_mode": "count"}),
        &tree,
    )
    .await;
    assert_eq!(
        out,
        format!(
            "{}:1\n\nFound 1 total matches across 1 file.",
            tree.path("text.txt")
        )
    );
    // Content: what was printed before the NUL was seen stays, and a warning says the
    // search stopped there.
    let out = ok(
        "Grep",
        json!({"pattern": "hello", "output_mode": "content", "head_limit": 0}),
        &tree,
    )
    .await;
    let big: Vec<&str> = out
        .lines()
        .filter(|line| line.starts_with(&tree.path("big.bin")))
        .collect();
    assert!(big.len() < 10_000, "{} lines of big.bin", big.len());
    assert_eq!(
        big[big.len() - 1],
        format!(
            "{}: WARNING: stopped searching binary file after match (found \"\\0\" byte around \
             offset 158890)",
            tree.path("big.bin")
        )
    );
    assert!(!out.contains("bin.txt"), "{out}");
}

// ---- agreement with ripgrep ----

/// Whether `rg` runs; prints a note when it does not.
fn have_rg() -> bool {
    let ok = Command::new("rg")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !ok {
        eprintln!("note: `rg` is not on PATH; skipping the ripgrep agreement checks");
    }
    ok
}

/// rg's output lines for `args` on `root`, sorted by path (rg's `--sort path`). It runs in
/// `root`, because rg matches `--glob`s relative to its working directory and Grep relative
/// to the searched directory.
fn rg(root: &Path, args: &[&str]) -> Vec<String> {
    rg_on(root, args, root)
}

/// rg's output lines for `args` on `target`, run in `root`.
fn rg_on(root: &Path, args: &[&str], target: &Path) -> Vec<String> {
    let out = Command::new("rg")
        .current_dir(root)
        .args([
            "--no-config",
            "--no-require-git",
            "--sort",
            "path",
            "--no-heading",
        ])
        .args(["--with-filename", "--color", "never"])
        .args(args)
        .arg(target)
        .env_remove("RIPGREP_CONFIG_PATH")
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|code| code <= 1),
        "rg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// One comparison: a Grep input (without output_mode) and the rg flags that mean the same.
struct Case {
    input: Value,
    flags: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            input: json!({"pattern": "fn "}),
            flags: &["fn "],
        },
        Case {
            input: json!({"pattern": "hello"}),
            flags: &["hello"],
        },
        Case {
            input: json!({"pattern": r"impl(<[^>]*>)?\s+\w+\s+for\s+\w+"}),
            flags: &[r"impl(<[^>]*>)?\s+\w+\s+for\s+\w+"],
        },
        Case {
            input: json!({"pattern": r"^\s*//[!/] "}),
            flags: &[r"^\s*//[!/] "],
        },
        Case {
            input: json!({"pattern": "unicode|hello", "-i": true}),
            flags: &["-i", "unicode|hello"],
        },
        Case {
            input: json!({"pattern": "pub", "type": "rust"}),
            flags: &["--type", "rust", "pub"],
        },
        Case {
            input: json!({"pattern": "(?i)hello", "type": "md"}),
            flags: &["--type", "md", "(?i)hello"],
        },
        Case {
            input: json!({"pattern": "use", "glob": "*.md"}),
            flags: &["--glob", "*.md", "use"],
        },
        Case {
            input: json!({"pattern": "Error", "glob": "!*.rs"}),
            flags: &["--glob", "!*.rs", "Error"],
        },
        Case {
            input: json!({"pattern": "hello", "glob": "**/nested/**"}),
            flags: &["--glob", "**/nested/**", "hello"],
        },
        Case {
            input: json!({"pattern": r"pub fn \w+\([^)]*\n[^)]*\)", "multiline": true}),
            flags: &["-U", "--multiline-dotall", r"pub fn \w+\([^)]*\n[^)]*\)"],
        },
        Case {
            input: json!({"pattern": r"struct \w+ \{.*?\}", "multiline": true}),
            flags: &["-U", "--multiline-dotall", r"struct \w+ \{.*?\}"],
        },
        Case {
            input: json!({"pattern": r"#\[derive.*\n.*pub (struct|enum)", "multiline": true, "-i": true}),
            flags: &[
                "-U",
                "--multiline-dotall",
                "-i",
                r"#\[derive.*\n.*pub (struct|enum)",
            ],
        },
    ]
}

/// Runs every case in every output mode on `root` with Grep and with rg; returns how many
/// cases had any match (so a test can insist the comparison was not vacuous).
async fn agree_with_rg(root: &Path) -> usize {
    let ctx = ToolContext::new(root);
    let root_str = root.display().to_string();
    let mut nonempty = 0;
    for case in cases() {
        let with = |extra: Value| {
            let mut input = case.input.clone();
            input["path"] = json!(root_str);
            input["head_limit"] = json!(0);
            for (key, value) in extra.as_object().unwrap() {
                input[key] = value.clone();
            }
            input
        };
        let flags = case.flags;
        let label = &case.input;

        // files_with_matches: the same set.
        let ours = run("Grep", with(json!({})), &ctx).await.unwrap();
        let ours: BTreeSet<String> = if ours == "No files found" {
            BTreeSet::new()
        } else {
            ours.lines().skip(1).map(str::to_owned).collect()
        };
        let theirs: BTreeSet<String> = rg(root, &[&["-l"], flags].concat()).into_iter().collect();
        assert_eq!(ours, theirs, "files_with_matches for {label}");
        if !theirs.is_empty() {
            nonempty += 1;
        }

        // count: the same path:count pairs.
        let ours = run("Grep", with(json!({"output_mode": "count"})), &ctx)
            .await
            .unwrap();
        let ours: Vec<String> = ours
            .lines()
            .take_while(|line| !line.is_empty() && *line != "No matches found")
            .map(str::to_owned)
            .collect();
        assert_eq!(
            ours,
            rg(root, &[&["-c"], flags].concat()),
            "count for {label}"
        );

        // content: the same lines in the same order, with and without context.
        for (extra, rg_extra) in [
            (json!({"output_mode": "content"}), vec!["-n"]),
            (json!({"output_mode": "content", "-n": false}), vec!["-N"]),
            (
                json!({"output_mode": "content", "-C": 2}),
                vec!["-n", "-C", "2"],
            ),
            (
                json!({"output_mode": "content", "-A": 1, "-B": 3}),
                vec!["-n", "-A", "1", "-B", "3"],
            ),
        ] {
            let ours = run("Grep", with(extra.clone()), &ctx).await.unwrap();
            let ours: Vec<String> = if ours == "No matches found" {
                Vec::new()
            } else {
                ours.lines().map(str::to_owned).collect()
            };
            // rg prints long lines whole; Grep cuts them, so compare only short ones.
            let theirs = rg(root, &[rg_extra.as_slice(), flags].concat());
            let short = |lines: Vec<String>| -> Vec<String> {
                lines
                    .into_iter()
                    .filter(|line| line.chars().count() < 400)
                    .collect()
            };
            assert_eq!(short(ours), short(theirs), "content {extra} for {label}");
        }
    }
    nonempty
}

#[tokio::test]
async fn grep_agrees_with_rg_on_the_test_tree() {
    if !have_rg() {
        return;
    }
    let tree = tree();
    let nonempty = agree_with_rg(&tree.root).await;
    assert!(nonempty >= 5, "only {nonempty} cases matched anything");
}

#[tokio::test]
async fn grep_agrees_with_rg_on_binary_files() {
    if !have_rg() {
        return;
    }
    let tree = binary_tree();
    // Walked: rg's BinaryDetection::quit.
    let nonempty = agree_with_rg(&tree.root).await;
    assert!(nonempty >= 2, "only {nonempty} cases matched anything");
    // Named as `path`: rg's BinaryDetection::convert. Grep's notes on binary files follow a
    // blank line; they are not compared.
    for file in ["bin.txt", "big.bin", "text.txt"] {
        for (mode, flag, skip) in [
            ("content", "-n", 0),
            ("count", "-c", 0),
            ("files_with_matches", "-l", 1),
        ] {
            let input =
                json!({"pattern": "hello", "path": file, "output_mode": mode, "head_limit": 0});
            let ours = ok("Grep", input, &tree).await;
            let ours: Vec<String> = ours
                .lines()
                .skip(skip)
                .take_while(|line| !line.is_empty())
                .map(str::to_owned)
                .collect();
            // rg memory-maps a file it is given and so reads big.bin whole before it sees the
            // NUL; Grep reads files in buffers, as rg does with --no-mmap.
            let theirs = rg_on(
                &tree.root,
                &["--no-mmap", flag, "hello"],
                &tree.root.join(file),
            );
            assert_eq!(ours, theirs, "{mode} on {file}");
        }
    }
}

#[tokio::test]
async fn grep_agrees_with_rg_on_this_repo() {
    if !have_rg() {
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tool-sdk/src")
        .canonicalize()
        .unwrap();
    let nonempty = agree_with_rg(&src).await;
    assert!(nonempty >= 8, "only {nonempty} cases matched anything");
}

/// The source of regex-syntax in the cargo registry (a dependency, so it is there after any
/// build), if it can be found.
fn registry_crate(prefix: &str) -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))?;
    let mut found = Vec::new();
    for index in std::fs::read_dir(cargo_home.join("registry/src")).ok()? {
        for krate in std::fs::read_dir(index.ok()?.path()).ok()? {
            let path = krate.ok()?.path();
            let name = path.file_name()?.to_string_lossy().into_owned();
            if name.starts_with(prefix)
                && name[prefix.len()..].starts_with(|c: char| c.is_ascii_digit())
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found.pop()
}

#[tokio::test]
async fn grep_agrees_with_rg_on_a_registry_crate() {
    if !have_rg() {
        return;
    }
    let Some(krate) = registry_crate("regex-syntax-") else {
        eprintln!("note: regex-syntax sources not found in the cargo registry; skipping");
        return;
    };
    let nonempty = agree_with_rg(&krate.canonicalize().unwrap()).await;
    assert!(nonempty >= 8, "only {nonempty} cases matched anything");
}

#[tokio::test]
async fn glob_agrees_with_rg_files() {
    if !have_rg() {
        return;
    }
    let tree = tree();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tool-sdk/src")
        .canonicalize()
        .unwrap();
    // Patterns whose meaning is the same in glob and gitignore syntax.
    for (root, pattern) in [
        (tree.root.clone(), "**/*.rs"),
        (tree.root.clone(), "src/**/*"),
        // (Not `*.txt`: rg's --glob would list secret.txt, which .ignore excludes; Glob
        // never lists ignored files.)
        (tree.root.clone(), "**/*.{md,ts}"),
        (src.clone(), "**/*.rs"),
        (src.clone(), "agent/**/*.rs"),
        (src, "**/mod.rs"),
    ] {
        let ctx = ToolContext::new(&root);
        let ours = run("Glob", json!({"pattern": pattern}), &ctx)
            .await
            .unwrap();
        let (truncated, ours): (Vec<&str>, Vec<&str>) = ours
            .lines()
            .partition(|line| line.starts_with("(Results are truncated"));
        let ours: BTreeSet<String> = ours.into_iter().map(str::to_owned).collect();
        let theirs: BTreeSet<String> = rg(&root, &["--files", "--glob", pattern])
            .into_iter()
            .collect();
        assert!(!theirs.is_empty(), "{pattern}");
        match truncated.first() {
            None => assert_eq!(ours, theirs, "Glob {pattern} in {}", root.display()),
            // Past Glob's cap (a source tree that grew): the newest it lists are rg's files,
            // and it says how many more matched.
            Some(note) => {
                assert!(
                    ours.is_subset(&theirs),
                    "Glob {pattern} in {}",
                    root.display()
                );
                let more = theirs.len() - ours.len();
                assert!(
                    note.contains(&format!(": {more} more files matched")),
                    "{note}"
                );
            }
        }
    }
    drop(tree.dir);
}
