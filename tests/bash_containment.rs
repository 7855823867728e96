//! The Bash tool's hardening: git configuration of a hostile repository does not run programs,
//! and (on Linux, with a sandbox in the context) the shell may write only inside the sandbox
//! and the temporary directory, and opens no network sockets unless allowed.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tool_sdk::builtin::BashTool;
use tool_sdk::permission::bash::{Decision, classify};
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

/// Git commands the classifier runs without asking, each of which would run a program of a
/// hostile repository's choosing without the Bash tool's overrides.
const AUTO_ALLOWED_GIT: &[&str] = &[
    "git status",
    "git status --short",
    "git diff",
    "git diff --stat",
    "git diff HEAD~1",
    "git diff HEAD~2 HEAD~1",
    "git diff --cached",
    "git diff-index -p HEAD",
    "git diff-files -p",
    "git log -p",
    "git log -1",
    "git log --stat",
    "git log -G a",
    "git log --format=%G?",
    "git show",
    "git show HEAD~1:file.txt",
    "git blame file.txt",
    "git annotate file.txt",
    "git cat-file --textconv HEAD:file.txt",
    "git cat-file --filters HEAD:file.txt",
    "git grep --textconv one",
    "git ls-files -m",
    "git describe --always --dirty",
    "git whatchanged -p",
    "git stash list -p",
];

#[tokio::test]
async fn auto_allowed_git_commands_run_no_program_a_hostile_repository_chooses() {
    if !have_git() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let repo = fresh(&std::env::temp_dir(), "drivers");
    // Outside the repository, so that no git command sees them.
    let marks = fresh(&std::env::temp_dir(), "drivers-marks");
    // Each program the repository names leaves a file named after itself in `marks`.
    let script = |name: &str| {
        let path = marks.join(format!("{name}.sh"));
        std::fs::write(
            &path,
            format!("#!/bin/sh\ntouch '{}/{name}'\nexit 1\n", marks.display()),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        path.display().to_string()
    };
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "test@example.com"]);
    git(&repo, &["config", "user.name", "Test"]);
    std::fs::write(repo.join("file.txt"), "one\n").unwrap();
    std::fs::write(repo.join("a.txt"), "one\n").unwrap();
    git(&repo, &["add", "file.txt", "a.txt"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    std::fs::write(repo.join("file.txt"), "one\ntwo\n").unwrap();
    std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
    git(&repo, &["commit", "-q", "-a", "-m", "second"]);
    // A commit carrying an SSH signature, on top: showing it verifies the signature with
    // gpg.ssh.program.
    let stdout = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let signed = format!(
        "tree {}\nparent {}\nauthor Test <test@example.com> 1700000000 +0000\n\
         committer Test <test@example.com> 1700000000 +0000\n\
         gpgsig -----BEGIN SSH SIGNATURE-----\n U1NIU0lHAAAAAQ==\n -----END SSH SIGNATURE-----\n\
         \nsigned\n",
        stdout(&["rev-parse", "HEAD^{tree}"]),
        stdout(&["rev-parse", "HEAD"]),
    );
    std::fs::write(repo.join(".git/signed"), signed).unwrap();
    let signed = stdout(&["hash-object", "-t", "commit", "-w", ".git/signed"]);
    git(&repo, &["update-ref", "HEAD", &signed]);

    // The drivers, one under a name with a dot and capitals, chosen by the attributes file
    // that outranks all others. (A `process` filter replaces `clean` and `smudge`, and a diff
    // `command` replaces `textconv` in `git diff`: a.txt's drivers have the others.)
    for (key, value) in [
        ("filter.Ev.il.clean", script("clean")),
        ("filter.Ev.il.smudge", script("smudge")),
        ("filter.Ev.il.process", script("process")),
        ("diff.Ev.il.textconv", script("textconv")),
        ("filter.cl.clean", script("clean")),
        ("filter.cl.smudge", script("smudge")),
        ("diff.cmd.command", script("diffcommand")),
        ("log.showSignature", "true".to_owned()),
        ("gpg.ssh.allowedSignersFile", "/dev/null".to_owned()),
        ("gpg.ssh.program", script("gpgssh")),
        ("gpg.x509.program", script("gpgsm")),
    ] {
        git(&repo, &["config", key, &value]);
    }
    std::fs::write(
        repo.join(".git/info/attributes"),
        "file.txt filter=Ev.il diff=Ev.il\na.txt filter=cl diff=cmd\n",
    )
    .unwrap();
    // Changes whose stat data git must check by content.
    for name in ["file.txt", "a.txt"] {
        std::fs::write(repo.join(name), "one\nthree\n").unwrap();
        File::options()
            .write(true)
            .open(repo.join(name))
            .unwrap()
            .set_modified(
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000),
            )
            .unwrap();
    }

    let ran = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&marks)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.ends_with(".sh"))
            .collect();
        names.sort();
        for name in &names {
            std::fs::remove_file(marks.join(name)).unwrap();
        }
        names
    };

    let registry = registry();
    let ctx = ToolContext::new(&repo);
    let mut failures = Vec::new();
    for command in AUTO_ALLOWED_GIT {
        assert_eq!(
            classify(command).decision,
            Decision::Allow,
            "{command} should be auto-allowed for this test to mean something"
        );
        let output = bash(&registry, command, &ctx).await;
        let programs = ran();
        if !programs.is_empty() {
            failures.push(format!("`{command}` ran {programs:?}: {output}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Their output is still what git shows.
    let log = bash(&registry, "git log -p -2 --format=%s", &ctx).await;
    assert!(log.contains("+two"), "{log}");
    let status = bash(&registry, "git status --short", &ctx).await;
    assert!(status.contains(" M file.txt"), "{status}");

    // Run directly, the same commands do run the repository's programs: the test is not
    // vacuous.
    let mut seen = BTreeSet::new();
    for command in AUTO_ALLOWED_GIT {
        let args: Vec<&str> = command.split(' ').skip(1).collect();
        let _ = std::process::Command::new("git")
            .args(&args)
            .current_dir(&repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        seen.extend(ran());
    }
    for program in ["clean", "process", "textconv", "diffcommand", "gpgssh"] {
        assert!(
            seen.contains(program),
            "{program} never ran directly: {seen:?}"
        );
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use tool_sdk::StateMap;
    use tool_sdk::builtin::ShellPolicy;
    use tool_sdk::permission::Sandbox;

    /// Where the directories of these tests live: somewhere NOT under a directory the shell
    /// may always write (the temp dirs). The target directory usually is such a place, but
    /// not when the checkout itself sits under /tmp; then the home directory is used.
    fn outside_tmp(name: &str) -> PathBuf {
        let always_writable = [std::env::temp_dir(), "/tmp".into(), "/dev/shm".into()];
        let candidates = [
            Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")),
        ];
        let parent = candidates
            .into_iter()
            .flatten()
            .find(|dir| {
                let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
                !always_writable
                    .iter()
                    .any(|tmp| dir.starts_with(tmp.canonicalize().unwrap_or_else(|_| tmp.clone())))
            })
            .expect("a directory outside the temp dirs (the target dir or $HOME/.cache)");
        std::fs::create_dir_all(&parent).unwrap();
        fresh(&parent, name)
    }

    fn contained(ws: &Path, policy: Option<ShellPolicy>) -> ToolContext {
        let sandbox = Sandbox::new(ws).unwrap();
        let mut ctx = ToolContext::new(ws).with_sandbox(Arc::new(sandbox));
        if let Some(policy) = policy {
            let mut state = StateMap::new();
            state.insert(policy);
            ctx = ctx.with_state(state);
        }
        ctx
    }

    /// Whether this kernel enforced the containment; when not, the result must say so.
    fn enforced(output: &str) -> bool {
        if output.contains("[not OS-contained:") {
            eprintln!("skipped: no OS containment on this kernel ({output})");
            false
        } else {
            true
        }
    }

    /// The shell may write beneath the directory the sandbox was built on, not beneath
    /// whatever its path names when the command runs.
    #[tokio::test]
    async fn a_working_directory_swapped_for_a_link_opens_nothing_outside() {
        let ws = outside_tmp("swapped-ws");
        let outside = outside_tmp("swapped-outside");
        let registry = registry();
        let ctx = contained(&ws, None);
        let probe = bash(&registry, "echo fine > ok", &ctx).await;
        if !enforced(&probe) {
            return;
        }
        let moved = ws.with_file_name(format!(
            "{}-moved",
            ws.file_name().unwrap().to_string_lossy()
        ));
        let _ = std::fs::remove_dir_all(&moved);
        std::fs::rename(&ws, &moved).unwrap();
        std::os::unix::fs::symlink(&outside, &ws).unwrap();

        let out = bash(
            &registry,
            &format!("echo pwned > '{}'", outside.join("escaped").display()),
            &ctx,
        )
        .await;
        assert!(!out.ends_with("Exit code: 0"), "{out}");
        assert!(!outside.join("escaped").exists(), "{out}");
        // The original directory is still the writable one.
        let original = bash(
            &registry,
            &format!("echo fine > '{}'", moved.join("still").display()),
            &ctx,
        )
        .await;
        assert!(original.ends_with("Exit code: 0"), "{original}");
        std::fs::remove_file(&ws).unwrap();
        let _ = std::fs::remove_dir_all(&moved);
    }

    #[tokio::test]
    async fn the_shell_writes_only_inside_the_sandbox_and_the_temp_dir() {
        let ws = outside_tmp("ws");
        let outside = outside_tmp("outside");
        let registry = registry();
        let ctx = contained(&ws, None);

        let inside = bash(&registry, "echo fine > ok && cat ok", &ctx).await;
        if !enforced(&inside) {
            return;
        }
        assert!(inside.starts_with("fine\n"), "{inside}");
        assert!(inside.ends_with("Exit code: 0"), "{inside}");
        assert!(ws.join("ok").exists());

        let tmp_file = std::env::temp_dir().join(format!("bash-contained-{}", std::process::id()));
        let tmp = bash(
            &registry,
            &format!(
                "echo temp > '{0}' && cat '{0}' && echo x > /dev/null && echo err >&2",
                tmp_file.display()
            ),
            &ctx,
        )
        .await;
        assert!(tmp.starts_with("temp\nerr\n"), "{tmp}");
        assert!(tmp.ends_with("Exit code: 0"), "{tmp}");
        let _ = std::fs::remove_file(&tmp_file);

        let blocked_file = outside.join("blocked");
        let blocked = bash(
            &registry,
            &format!("echo no > '{}'", blocked_file.display()),
            &ctx,
        )
        .await;
        assert!(blocked.contains("Permission denied"), "{blocked}");
        assert!(blocked.ends_with("Exit code: 1"), "{blocked}");
        assert!(!blocked_file.exists());
        let mkdir = bash(
            &registry,
            &format!("mkdir '{}/sub'", outside.display()),
            &ctx,
        )
        .await;
        assert!(mkdir.contains("Permission denied"), "{mkdir}");

        // Background commands are contained the same way.
        let started = registry
            .execute(
                "Bash",
                json!({
                    "command": format!("echo no > '{}'", blocked_file.display()),
                    "run_in_background": true
                }),
                &ctx,
            )
            .await
            .unwrap();
        assert!(!started.is_error, "{started:?}");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(!blocked_file.exists());

        // Only the spawning thread was restricted: this process still writes there.
        std::fs::write(&blocked_file, "yes").unwrap();
        let reads = bash(
            &registry,
            &format!("cat '{}'", blocked_file.display()),
            &ctx,
        )
        .await;
        assert!(reads.starts_with("yes"), "{reads}");
    }

    #[tokio::test]
    async fn network_sockets_are_blocked_unless_the_policy_allows_them() {
        let ws = outside_tmp("net");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
        let registry = registry();

        let off = bash(&registry, &connect, &contained(&ws, None)).await;
        if !enforced(&off) {
            return;
        }
        assert!(!off.contains("connected"), "{off}");
        assert!(off.contains("Permission denied"), "{off}");
        // Unix sockets and pipes still work.
        let local = bash(&registry, "echo piped | cat", &contained(&ws, None)).await;
        assert!(local.starts_with("piped"), "{local}");

        let policy = ShellPolicy {
            network: true,
            ..ShellPolicy::default()
        };
        let on = bash(&registry, &connect, &contained(&ws, Some(policy))).await;
        assert!(on.starts_with("connected"), "{on}");
        assert!(on.ends_with("Exit code: 0"), "{on}");
    }

    #[tokio::test]
    async fn without_a_sandbox_nothing_is_confined() {
        let outside = outside_tmp("free");
        let registry = registry();
        let ctx = ToolContext::new(&outside);
        let free = bash(&registry, "echo free > f && cat f", &ctx).await;
        assert!(free.starts_with("free\n"), "{free}");
        assert!(!free.contains("OS-contained"), "{free}");
    }
}
