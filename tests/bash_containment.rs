//! The Bash tool's hardening: git configuration of a hostile repository does not run programs,
//! and (on Linux, with a sandbox in the context) the shell may write only inside the sandbox
//! and the temporary directory, and opens no network sockets unless allowed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tool_sdk::builtin::BashTool;
use tool_sdk::{ToolContext, ToolOutput, ToolRegistry};

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(BashTool)).unwrap();
    registry
}

/// A fresh, canonical directory under `parent`.
fn fresh(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(format!("bash-containment-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

async fn bash(registry: &ToolRegistry, command: &str, ctx: &ToolContext) -> String {
    let input: Value = json!({ "command": command });
    let output: ToolOutput = registry.execute("Bash", input, ctx).await.unwrap();
    assert!(!output.is_error, "{output:?}");
    output.to_text().into_owned()
}

fn have_git() -> bool {
    std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn a_hostile_git_config_runs_nothing() {
    if !have_git() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let repo = fresh(&std::env::temp_dir(), "git");
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "test@example.com"]);
    git(&repo, &["config", "user.name", "Test"]);
    std::fs::write(repo.join("file.txt"), "one\n").unwrap();
    git(&repo, &["add", "file.txt"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    // Set after the commit, so the setup itself runs none of them.
    git(&repo, &["config", "core.fsmonitor", "touch FSMONITOR_RAN"]);
    git(&repo, &["config", "core.pager", "touch PAGER_RAN; cat"]);
    git(
        &repo,
        &["config", "diff.external", "touch EXTDIFF_RAN; true"],
    );
    git(&repo, &["config", "core.hooksPath", ".git/hooks"]);
    std::fs::write(repo.join("file.txt"), "two\n").unwrap();

    let registry = registry();
    let ctx = ToolContext::new(&repo);
    let status = bash(&registry, "git status --short", &ctx).await;
    assert!(status.contains(" M file.txt"), "{status}");
    assert!(status.ends_with("Exit code: 0"), "{status}");
    let diff = bash(&registry, "git diff", &ctx).await;
    assert!(diff.contains("diff --git a/file.txt b/file.txt"), "{diff}");
    assert!(diff.contains("-one") && diff.contains("+two"), "{diff}");
    assert!(diff.ends_with("Exit code: 0"), "{diff}");

    for marker in ["FSMONITOR_RAN", "PAGER_RAN", "EXTDIFF_RAN"] {
        assert!(
            !repo.join(marker).exists(),
            "{marker} exists: the repository's config ran a program"
        );
    }
    // The same repository does run them outside the Bash tool: the test is not vacuous.
    let direct = std::process::Command::new("git")
        .arg("diff")
        .current_dir(&repo)
        .env_remove("GIT_EXTERNAL_DIFF")
        .output()
        .unwrap();
    assert!(direct.status.success());
    assert!(
        repo.join("EXTDIFF_RAN").exists(),
        "diff.external did not run directly"
    );
}
