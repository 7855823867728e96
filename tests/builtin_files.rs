//! The built-in file tools (Read, Write, Edit, NotebookEdit) through the global registry, with
//! JSON input, on real files in a temporary directory. Each test shares one `ToolContext`
//! between its calls, so the read-before-write checks see what earlier calls did.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{Value, json};
use tempfile::TempDir;
use tool_sdk::{ContentBlock, ToolContext, ToolErrorKind, ToolOutput, ToolRegistry};

struct Env {
    dir: TempDir,
    ctx: ToolContext,
}

impl Env {
    fn new() -> Self {
        let dir = TempDir::new().unwrap();
        let ctx = ToolContext::new(dir.path());
        Env { dir, ctx }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a file behind the tools' back.
    fn put(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&path, content).unwrap();
        path
    }

    /// A call as the model makes it: JSON in, the tool_result out.
    async fn call(&self, tool: &str, input: Value) -> ToolOutput {
        registry().call(tool, input, &self.ctx).await
    }

    /// A call that must succeed; returns its text.
    async fn ok(&self, tool: &str, input: Value) -> String {
        let out = self.call(tool, input.clone()).await;
        assert!(!out.is_error, "{tool} {input} failed: {}", out.to_text());
        out.to_text().into_owned()
    }

    /// A call that must fail with this kind; returns the message.
    async fn err(&self, tool: &str, input: Value, kind: ToolErrorKind) -> String {
        match registry().execute(tool, input.clone(), &self.ctx).await {
            Ok(out) => panic!("{tool} {input} should fail, got {}", out.to_text()),
            Err(error) => {
                assert_eq!(error.kind(), kind, "{tool} {input}: {error}");
                error.to_string()
            }
        }
    }

    async fn read(&self, path: &Path) -> String {
        self.ok("Read", json!({"file_path": path})).await
    }

    /// Every file name in the directory, sorted: checks that no temporary file is left.
    fn listing(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

fn registry() -> &'static ToolRegistry {
    ToolRegistry::global().unwrap()
}

fn text(path: &Path) -> String {
    fs::read_to_string(path).unwrap()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Changes a file as another program would, with an mtime unlike any the tools recorded
/// (two writes within one clock tick can share an mtime).
fn change_behind_the_back(path: &Path, content: &str) {
    fs::write(path, content).unwrap();
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000))
        .unwrap();
}

// ---- registration and schemas ----

#[test]
fn the_file_tools_are_builtins_under_claude_code_names() {
    let builtins = tool_sdk::builtin_tools().unwrap();
    let names: Vec<&str> = builtins.iter().map(|tool| tool.name()).collect();
    for name in ["Read", "Write", "Edit", "NotebookEdit"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for tool in &builtins {
        assert_eq!(tool.category(), Some("builtin"));
    }
    let read = registry().get("Read").unwrap();
    assert!(read.is_read_only());
    assert_eq!(
        read.display_title(&json!({"file_path": "/a/b"})),
        "Read /a/b"
    );
    for name in ["Write", "Edit", "NotebookEdit"] {
        assert!(!registry().get(name).unwrap().is_read_only(), "{name}");
    }
}

#[test]
fn parameters_have_claude_code_names() {
    let cases: [(&str, &[&str], &[&str]); 4] = [
        ("Read", &["file_path", "offset", "limit"], &["file_path"]),
        (
            "Write",
            &["file_path", "content"],
            &["file_path", "content"],
        ),
        (
            "Edit",
            &["file_path", "old_string", "new_string", "replace_all"],
            &["file_path", "old_string", "new_string"],
        ),
        (
            "NotebookEdit",
            &[
                "notebook_path",
                "cell_id",
                "new_source",
                "cell_type",
                "edit_mode",
            ],
            &["notebook_path", "new_source"],
        ),
    ];
    for (name, properties, required) in cases {
        let tool = registry().get(name).unwrap();
        let schema = tool.input_schema();
        let mut have: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        have.sort();
        let mut want = properties.to_vec();
        want.sort();
        assert_eq!(have, want, "{name}");
        assert_eq!(schema["required"], json!(required), "{name}");
        assert!(tool.description().len() > 100, "{name} needs guidance");
    }
    let schema = registry()
        .get("NotebookEdit")
        .unwrap()
        .input_schema()
        .to_string();
    for value in ["replace", "insert", "delete", "code", "markdown"] {
        assert!(
            schema.contains(&format!("\"{value}\"")),
            "{value}: {schema}"
        );
    }
}

// ---- Read ----

#[tokio::test]
async fn read_numbers_lines_like_cat_n() {
    let env = Env::new();
    let path = env.put("a.txt", "alpha\n\tbeta\ngamma\n");
    assert_eq!(
        env.read(&path).await,
        "     1\talpha\n     2\t\tbeta\n     3\tgamma"
    );
}

#[tokio::test]
async fn read_takes_relative_paths_from_the_working_directory() {
    let env = Env::new();
    env.put("sub/rel.txt", "relative\n");
    let out = env.ok("Read", json!({"file_path": "sub/rel.txt"})).await;
    assert_eq!(out, "     1\trelative");
}

#[tokio::test]
async fn read_offset_and_limit_pick_lines_and_say_what_is_left() {
    let env = Env::new();
    let body: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    let path = env.put("ten.txt", body);
    let out = env
        .ok("Read", json!({"file_path": path, "offset": 3, "limit": 2}))
        .await;
    let (shown, note) = out.split_once("\n\n").unwrap();
    assert_eq!(shown, "     3\tline 3\n     4\tline 4");
    assert!(note.contains("3-4 of 10"), "{note}");
    assert!(note.contains("offset=5"), "{note}");

    let out = env
        .ok("Read", json!({"file_path": path, "offset": 9}))
        .await;
    assert_eq!(out, "     9\tline 9\n    10\tline 10", "no note at the end");

    let out = env
        .ok("Read", json!({"file_path": path, "offset": 11}))
        .await;
    assert!(out.contains("past its end"), "{out}");
}

#[tokio::test]
async fn read_stops_at_2000_lines_by_default() {
    let env = Env::new();
    let body: String = (1..=2500).map(|n| format!("l{n}\n")).collect();
    let path = env.put("long.txt", body);
    let out = env.read(&path).await;
    assert!(out.contains("\n  2000\tl2000\n"), "last line shown");
    assert!(!out.contains("\tl2001"), "one line too many");
    assert!(out.contains("1-2000 of 2500"));
    assert!(out.contains("offset=2001"));
}

#[tokio::test]
async fn read_cuts_very_long_lines() {
    let env = Env::new();
    let long = "é".repeat(2500);
    let path = env.put("wide.txt", format!("{long}\nshort\n"));
    let out = env.read(&path).await;
    let first = out.lines().next().unwrap();
    let kept = first.trim_start().strip_prefix("1\t").unwrap();
    assert!(kept.starts_with(&"é".repeat(2000)));
    assert!(
        !kept.starts_with(&"é".repeat(2001)),
        "cut at 2000 characters"
    );
    assert!(
        kept.contains("line cut: 2500 characters"),
        "{}",
        &kept[4000..]
    );
    assert!(out.ends_with("     2\tshort"));
}

#[tokio::test]
async fn read_says_when_a_file_is_empty_and_it_counts_as_read() {
    let env = Env::new();
    let path = env.put("empty.txt", "");
    let out = env.read(&path).await;
    assert!(out.contains("exists but is empty"), "{out}");
    env.ok("Write", json!({"file_path": path, "content": "now full\n"}))
        .await;
    assert_eq!(text(&path), "now full\n");
}

#[tokio::test]
async fn read_of_a_missing_file_is_not_found_and_suggests_a_sibling() {
    let env = Env::new();
    env.put("config.toml", "x = 1\n");
    let missing = env.path("confg.toml");
    let message = env
        .err(
            "Read",
            json!({"file_path": missing}),
            ToolErrorKind::NotFound,
        )
        .await;
    assert!(
        message.contains(&missing.display().to_string()),
        "{message}"
    );
    assert!(message.contains("did you mean"), "{message}");
    assert!(message.contains("config.toml"), "{message}");

    let message = env
        .err(
            "Read",
            json!({"file_path": env.path("nothing-like-it")}),
            ToolErrorKind::NotFound,
        )
        .await;
    assert!(!message.contains("did you mean"), "{message}");
}

#[tokio::test]
async fn read_refuses_directories() {
    let env = Env::new();
    fs::create_dir(env.path("folder")).unwrap();
    let message = env
        .err(
            "Read",
            json!({"file_path": env.path("folder")}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("directory"), "{message}");
}

#[tokio::test]
async fn read_refuses_a_fifo_without_blocking() {
    let env = Env::new();
    let fifo = env.path("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    // Opening a FIFO with no writer blocks forever: the call must not open it.
    let message = tokio::time::timeout(
        Duration::from_secs(10),
        env.err(
            "Read",
            json!({"file_path": fifo}),
            ToolErrorKind::InvalidInput,
        ),
    )
    .await
    .expect("Read hung on a FIFO");
    assert!(message.contains("FIFO"), "{message}");
    // Nor may Write or Edit replace it.
    let message = tokio::time::timeout(
        Duration::from_secs(10),
        env.err(
            "Write",
            json!({"file_path": fifo, "content": "x"}),
            ToolErrorKind::InvalidInput,
        ),
    )
    .await
    .expect("Write hung on a FIFO");
    assert!(message.contains("FIFO"), "{message}");
}

#[tokio::test]
async fn read_refuses_devices() {
    let env = Env::new();
    let message = env
        .err(
            "Read",
            json!({"file_path": "/dev/null"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("character device"), "{message}");
}

#[tokio::test]
async fn read_refuses_binary_files() {
    let env = Env::new();
    let nul = env.put("prog.bin", b"\x7fELF\x02\x01\x01\x00\x00\x00rest");
    let message = env
        .err(
            "Read",
            json!({"file_path": nul}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("binary"), "{message}");
    assert!(message.contains("NUL"), "{message}");

    let latin1 = env.put("latin1.txt", b"caf\xe9 cr\xe8me\n");
    let message = env
        .err(
            "Read",
            json!({"file_path": latin1}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("binary"), "{message}");
    assert!(message.contains("UTF-8"), "{message}");
    // A refused file does not count as read.
    let message = env
        .err(
            "Write",
            json!({"file_path": latin1, "content": "x"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("has not been read"), "{message}");
}

#[tokio::test]
async fn read_returns_images_as_image_blocks() {
    let env = Env::new();
    let mut webp = b"RIFF\x24\x00\x00\x00WEBPVP8 ".to_vec();
    webp.extend_from_slice(&[0u8; 16]);
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "shot.dat",
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR".to_vec(),
            "image/png",
        ),
        (
            "photo",
            vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J'],
            "image/jpeg",
        ),
        (
            "anim.gif",
            b"GIF89a\x01\x00\x01\x00\x00\x00\x00;".to_vec(),
            "image/gif",
        ),
        ("pic.webp", webp, "image/webp"),
    ];
    for (name, bytes, want) in cases {
        let path = env.put(name, &bytes);
        let out = env.call("Read", json!({"file_path": path})).await;
        assert!(!out.is_error, "{name}: {}", out.to_text());
        let [ContentBlock::Image { media_type, data }] = out.content.as_slice() else {
            panic!("{name}: expected one image block, got {:?}", out.content);
        };
        assert_eq!(
            media_type, want,
            "{name}: detected by magic bytes, not by name"
        );
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        assert_eq!(decoded, bytes, "{name}");
    }
}

const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Title\n",
    "Some *notes*."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 7,
   "id": "calc",
   "metadata": {"tags": ["keep"]},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": ["printed line\n"]
    },
    {
     "data": {"text/plain": ["42"]},
     "execution_count": 7,
     "metadata": {},
     "output_type": "execute_result"
    }
   ],
   "source": "print('printed line')\n6 * 7"
  }
 ],
 "metadata": {
  "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

#[tokio::test]
async fn read_renders_notebooks_cell_by_cell() {
    let env = Env::new();
    let path = env.put("analysis.ipynb", NOTEBOOK);
    let out = env.read(&path).await;
    let expected = [
        "2 cells",
        "<cell index=\"0\" id=\"intro\" type=\"markdown\">\n# Title\nSome *notes*.\n</cell>",
        "<cell index=\"1\" id=\"calc\" type=\"code\" execution_count=\"7\">\n\
         print('printed line')\n6 * 7\n\
         <output>\nprinted line\n</output>\n<output>\n42\n</output>\n</cell>",
    ];
    let mut rest = out.as_str();
    for part in expected {
        let at = rest
            .find(part)
            .unwrap_or_else(|| panic!("missing, or out of order: {part:?}\nin:\n{out}"));
        rest = &rest[at + part.len()..];
    }
    assert!(!out.contains("\"cell_type\""), "not raw JSON: {out}");
}

// ---- Write ----

#[tokio::test]
async fn write_creates_files_and_parent_directories() {
    let env = Env::new();
    let out = env
        .ok(
            "Write",
            json!({"file_path": "deep/er/new.txt", "content": "one\ntwo\nthree\n"}),
        )
        .await;
    let path = env.path("deep/er/new.txt");
    assert_eq!(text(&path), "one\ntwo\nthree\n");
    assert!(out.starts_with("Created "), "{out}");
    assert!(out.contains(&path.display().to_string()), "{out}");
    assert!(out.contains("3 lines"), "{out}");
    assert_eq!(env.listing(), ["deep"], "no temporary file left");
    assert_eq!(fs::read_dir(env.path("deep/er")).unwrap().count(), 1);
}

#[tokio::test]
async fn write_over_a_file_needs_a_read_first() {
    let env = Env::new();
    let path = env.put("old.txt", "original\n");
    let message = env
        .err(
            "Write",
            json!({"file_path": path, "content": "clobbered\n"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("has not been read"), "{message}");
    assert!(message.contains("Read"), "{message}");
    assert_eq!(text(&path), "original\n", "refused writes change nothing");

    env.read(&path).await;
    let out = env
        .ok("Write", json!({"file_path": path, "content": "replaced\n"}))
        .await;
    assert!(out.starts_with("Updated "), "{out}");
    assert!(out.contains("1 line"), "{out}");
    assert_eq!(text(&path), "replaced\n");
    assert_eq!(env.listing(), ["old.txt"], "no temporary file left");
}

#[tokio::test]
async fn write_refuses_a_file_changed_on_disk_since_it_was_read() {
    let env = Env::new();
    let path = env.put("shared.txt", "v1\n");
    env.read(&path).await;
    change_behind_the_back(&path, "v2 from the user\n");
    let message = env
        .err(
            "Write",
            json!({"file_path": path, "content": "v3\n"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("modified on disk"), "{message}");
    assert_eq!(text(&path), "v2 from the user\n");
    // Reading again makes it writable.
    env.read(&path).await;
    env.ok("Write", json!({"file_path": path, "content": "v3\n"}))
        .await;
    assert_eq!(text(&path), "v3\n");
}

#[tokio::test]
async fn a_write_counts_as_a_read_for_the_next_write_and_edit() {
    let env = Env::new();
    let path = env.path("fresh.txt");
    env.ok("Write", json!({"file_path": path, "content": "a\n"}))
        .await;
    env.ok("Write", json!({"file_path": path, "content": "b\n"}))
        .await;
    env.ok(
        "Edit",
        json!({"file_path": path, "old_string": "b", "new_string": "c"}),
    )
    .await;
    assert_eq!(text(&path), "c\n");
    let written = env.ctx.files().written();
    assert_eq!(written, [fs::canonicalize(&path).unwrap()]);
}

#[tokio::test]
async fn write_and_edit_keep_permissions() {
    let env = Env::new();
    let path = env.put("script.sh", "#!/bin/sh\necho hi\n");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o750)).unwrap();
    env.read(&path).await;
    env.ok(
        "Write",
        json!({"file_path": path, "content": "#!/bin/sh\necho bye\n"}),
    )
    .await;
    assert_eq!(mode(&path), 0o750);
    env.ok(
        "Edit",
        json!({"file_path": path, "old_string": "bye", "new_string": "ciao"}),
    )
    .await;
    assert_eq!(mode(&path), 0o750);
    assert_eq!(text(&path), "#!/bin/sh\necho ciao\n");
    assert_eq!(env.listing(), ["script.sh"], "no temporary file left");
}

#[tokio::test]
async fn write_through_a_symlink_changes_the_target_and_keeps_the_link() {
    let env = Env::new();
    let target = env.put("target.txt", "before\n");
    let link = env.path("link.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    env.read(&link).await;
    env.ok("Write", json!({"file_path": link, "content": "after\n"}))
        .await;
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(text(&target), "after\n");
}

// ---- Edit ----

#[tokio::test]
async fn edit_replaces_one_occurrence_and_returns_a_diff_for_the_ui() {
    let env = Env::new();
    let path = env.put("lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    env.read(&path).await;
    let out = env
        .call(
            "Edit",
            json!({"file_path": path, "old_string": "fn b() {}", "new_string": "fn bee() {}"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.to_text());
    assert_eq!(text(&path), "fn a() {}\nfn bee() {}\nfn c() {}\n");
    let message = out.to_text();
    assert!(message.contains("line 2"), "{message}");
    assert!(!message.contains("@@"), "the model gets no diff: {message}");
    let diff = out.structured.as_ref().unwrap()["diff"].as_str().unwrap();
    assert!(diff.contains("@@ -1,3 +1,3 @@"), "{diff}");
    assert!(diff.contains("\n-fn b() {}\n+fn bee() {}\n"), "{diff}");
    assert!(diff.contains("\n fn a() {}\n"), "context is kept: {diff}");
    assert_eq!(env.listing(), ["lib.rs"], "no temporary file left");
}

#[tokio::test]
async fn edit_needs_a_read_first_and_an_unchanged_file() {
    let env = Env::new();
    let path = env.put("notes.txt", "hello world\n");
    let input = json!({"file_path": path, "old_string": "world", "new_string": "there"});
    let message = env
        .err("Edit", input.clone(), ToolErrorKind::InvalidInput)
        .await;
    assert!(message.contains("has not been read"), "{message}");

    env.read(&path).await;
    change_behind_the_back(&path, "hello world, says the user\n");
    let message = env
        .err("Edit", input.clone(), ToolErrorKind::InvalidInput)
        .await;
    assert!(message.contains("modified on disk"), "{message}");
    assert_eq!(text(&path), "hello world, says the user\n");

    env.read(&path).await;
    env.ok("Edit", input).await;
    assert_eq!(text(&path), "hello there, says the user\n");
}

#[tokio::test]
async fn an_ambiguous_edit_names_the_lines_and_replace_all_changes_them_all() {
    let env = Env::new();
    let path = env.put("dup.txt", "x\nfoo\ny\nfoo bar\nfoo\n");
    env.read(&path).await;
    let message = env
        .err(
            "Edit",
            json!({"file_path": path, "old_string": "foo", "new_string": "baz"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("3 times"), "{message}");
    assert!(message.contains("lines 2, 4, 5"), "{message}");
    assert!(message.contains("replace_all"), "{message}");
    assert_eq!(text(&path), "x\nfoo\ny\nfoo bar\nfoo\n");

    let out = env
        .ok(
            "Edit",
            json!({"file_path": path, "old_string": "foo", "new_string": "baz", "replace_all": true}),
        )
        .await;
    assert!(out.contains("3 occurrences"), "{out}");
    assert_eq!(text(&path), "x\nbaz\ny\nbaz bar\nbaz\n");
}

#[tokio::test]
async fn edit_not_found_hints_at_whitespace_and_line_numbers() {
    let env = Env::new();
    let path = env.put("main.rs", "fn main() {\n    let x = 1;\n}\n");
    env.read(&path).await;

    let message = env
        .err(
            "Edit",
            json!({"file_path": path, "old_string": "let y", "new_string": "let z"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("not found"), "{message}");
    assert!(!message.contains("whitespace"), "{message}");

    let message = env
        .err(
            "Edit",
            json!({"file_path": path, "old_string": "fn main() {\n  let x = 1;", "new_string": "fn main() {\n  let x = 2;"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(
        message.contains("at line 1 if whitespace is ignored"),
        "{message}"
    );

    let message = env
        .err(
            "Edit",
            json!({"file_path": path, "old_string": "     2\t    let x = 1;", "new_string": "let x = 2;"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("line-number prefixes"), "{message}");
    assert_eq!(text(&path), "fn main() {\n    let x = 1;\n}\n");
}

#[tokio::test]
async fn edit_refuses_no_op_and_empty_old_string_edits() {
    let env = Env::new();
    let path = env.put("same.txt", "keep\n");
    env.read(&path).await;
    let message = env
        .err(
            "Edit",
            json!({"file_path": path, "old_string": "keep", "new_string": "keep"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("the same"), "{message}");
    let message = env
        .err(
            "Edit",
            json!({"file_path": path, "old_string": "", "new_string": "more"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("old_string is empty"), "{message}");
    assert_eq!(text(&path), "keep\n");

    // On a file that does not exist yet, an empty old_string creates it.
    let new = env.path("made/by/edit.txt");
    let out = env
        .ok(
            "Edit",
            json!({"file_path": new, "old_string": "", "new_string": "fresh\n"}),
        )
        .await;
    assert!(out.starts_with("Created"), "{out}");
    assert_eq!(text(&new), "fresh\n");
    // A non-empty old_string on a missing file is NotFound.
    env.err(
        "Edit",
        json!({"file_path": env.path("ghost.txt"), "old_string": "a", "new_string": "b"}),
        ToolErrorKind::NotFound,
    )
    .await;
}

#[tokio::test]
async fn edit_keeps_crlf_line_endings() {
    let env = Env::new();
    let path = env.put("win.txt", "one\r\ntwo\r\nthree\r\n");
    let shown = env.read(&path).await;
    assert!(!shown.contains('\r'), "{shown:?}");
    env.ok(
        "Edit",
        json!({"file_path": path, "old_string": "one\ntwo", "new_string": "uno\ndos"}),
    )
    .await;
    assert_eq!(text(&path), "uno\r\ndos\r\nthree\r\n");
}

// ---- NotebookEdit ----

fn notebook(path: &Path) -> Value {
    serde_json::from_str(&text(path)).unwrap()
}

#[tokio::test]
async fn notebook_edit_replaces_a_cell_by_id_and_leaves_the_rest_alone() {
    let env = Env::new();
    let path = env.put("nb.ipynb", NOTEBOOK);
    let input = json!({"notebook_path": path, "cell_id": "calc", "new_source": "x = 1\nx + 1"});
    let message = env
        .err("NotebookEdit", input.clone(), ToolErrorKind::InvalidInput)
        .await;
    assert!(message.contains("has not been read"), "{message}");

    env.read(&path).await;
    let out = env.ok("NotebookEdit", input).await;
    assert!(out.contains("calc"), "{out}");

    let mut expected: Value = serde_json::from_str(NOTEBOOK).unwrap();
    let cell = &mut expected["cells"][1];
    cell["source"] = json!("x = 1\nx + 1");
    cell["outputs"] = json!([]);
    cell["execution_count"] = Value::Null;
    assert_eq!(notebook(&path), expected);
    let written = text(&path);
    assert!(
        written.starts_with("{\n \"cells\": [\n  {\n"),
        "indent kept: {written}"
    );
    assert!(written.ends_with("}\n"), "final newline kept");
    assert_eq!(env.listing(), ["nb.ipynb"], "no temporary file left");
}

#[tokio::test]
async fn notebook_edit_inserts_and_deletes_cells() {
    let env = Env::new();
    let path = env.put("nb.ipynb", NOTEBOOK);
    env.read(&path).await;

    let message = env
        .err(
            "NotebookEdit",
            json!({"notebook_path": path, "cell_id": "intro", "new_source": "y", "edit_mode": "insert"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("cell_type"), "{message}");

    env.ok(
        "NotebookEdit",
        json!({"notebook_path": path, "cell_id": "intro", "new_source": "y = 2\ny",
               "cell_type": "code", "edit_mode": "insert"}),
    )
    .await;
    let cells = notebook(&path)["cells"].as_array().unwrap().clone();
    assert_eq!(cells.len(), 3);
    let new = &cells[1];
    assert_eq!(new["cell_type"], "code");
    assert_eq!(new["source"], json!(["y = 2\n", "y"]));
    assert_eq!(new["outputs"], json!([]));
    let id = new["id"].as_str().unwrap();
    assert_eq!(id.len(), 8);
    assert!(id != "intro" && id != "calc");
    assert_eq!(cells[2]["id"], "calc");

    // Without cell_id, insert goes to the start.
    env.ok(
        "NotebookEdit",
        json!({"notebook_path": path, "new_source": "# Top", "cell_type": "markdown",
               "edit_mode": "insert"}),
    )
    .await;
    let cells = notebook(&path)["cells"].as_array().unwrap().clone();
    assert_eq!(cells.len(), 4);
    assert_eq!(cells[0]["cell_type"], "markdown");
    assert!(cells[0].get("outputs").is_none());

    env.ok(
        "NotebookEdit",
        json!({"notebook_path": path, "cell_id": "calc", "new_source": "", "edit_mode": "delete"}),
    )
    .await;
    let ids: Vec<Value> = notebook(&path)["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| cell["id"].clone())
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[1], "intro");
    assert!(!ids.contains(&json!("calc")));

    let message = env
        .err(
            "NotebookEdit",
            json!({"notebook_path": path, "cell_id": "nope", "new_source": "z"}),
            ToolErrorKind::NotFound,
        )
        .await;
    assert!(message.contains("intro"), "lists the ids: {message}");
}

#[tokio::test]
async fn notebook_edit_addresses_cells_by_index_when_they_have_no_ids() {
    let env = Env::new();
    let old = r#"{"cells": [
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ["a = 1"]},
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ["b = 2"]}
 ], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}"#;
    let path = env.put("old.ipynb", old);
    env.read(&path).await;
    env.ok(
        "NotebookEdit",
        json!({"notebook_path": path, "cell_id": "1", "new_source": "# b", "cell_type": "markdown"}),
    )
    .await;
    let nb = notebook(&path);
    assert_eq!(nb["cells"][1]["cell_type"], "markdown");
    assert_eq!(nb["cells"][1]["source"], json!(["# b"]));
    assert!(nb["cells"][1].get("outputs").is_none());
    assert_eq!(nb["cells"][0]["source"], json!(["a = 1"]));

    env.ok(
        "NotebookEdit",
        json!({"notebook_path": path, "cell_id": "cell-0", "new_source": "c",
               "cell_type": "code", "edit_mode": "insert"}),
    )
    .await;
    let nb = notebook(&path);
    assert!(
        nb["cells"][1].get("id").is_none(),
        "nbformat 4.4 has no ids"
    );
    assert_eq!(nb["cells"][1]["source"], json!(["c"]));

    let message = env
        .err(
            "NotebookEdit",
            json!({"notebook_path": path, "cell_id": "7", "new_source": "z"}),
            ToolErrorKind::NotFound,
        )
        .await;
    assert!(message.contains("index from 0 to 2"), "{message}");
}

#[tokio::test]
async fn notebook_edit_refuses_a_notebook_changed_on_disk() {
    let env = Env::new();
    let path = env.put("nb.ipynb", NOTEBOOK);
    env.read(&path).await;
    let changed = NOTEBOOK.replace("Some *notes*.", "Edited by the user.");
    change_behind_the_back(&path, &changed);
    let message = env
        .err(
            "NotebookEdit",
            json!({"notebook_path": path, "cell_id": "intro", "new_source": "x"}),
            ToolErrorKind::InvalidInput,
        )
        .await;
    assert!(message.contains("modified on disk"), "{message}");
    assert_eq!(text(&path), changed);
}
