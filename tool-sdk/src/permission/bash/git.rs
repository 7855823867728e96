//! `git`: which subcommands and flags are read-only, and the argv rewrite that keeps a
//! repository's configuration from running programs.

use super::parse::Arg;
use super::safe_list::forbid;

/// Rewrites a `git` argv so that repository configuration cannot run programs while a
/// read-only subcommand runs: no pager, no fsmonitor or hooks, no external diff or
/// textconv drivers. Returns `argv` unchanged unless `argv[0]` is `git`.
pub fn harden_git(argv: &[String]) -> Vec<String> {
    if argv.first().map(String::as_str) != Some("git") {
        return argv.to_vec();
    }
    let mut out: Vec<String> = [
        "git",
        "--no-pager",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.pager=cat",
        "-c",
        "diff.external=",
        "-c",
        "core.sshCommand=false",
        "-c",
        "protocol.allow=never",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rest = &argv[1..];
    // The subcommand is the first word that is not a global option.
    let sub = rest.iter().position(|a| !a.starts_with('-'));
    match sub {
        Some(i) => {
            out.extend(rest[..=i].iter().cloned());
            if matches!(
                rest[i].as_str(),
                "diff" | "log" | "show" | "whatchanged" | "diff-tree" | "diff-files" | "diff-index"
            ) {
                out.push("--no-ext-diff".into());
                out.push("--no-textconv".into());
            }
            if rest[i] == "blame" || rest[i] == "annotate" {
                out.push("--no-textconv".into());
            }
            out.extend(rest[i + 1..].iter().cloned());
        }
        None => out.extend(rest.iter().cloned()),
    }
    out
}

pub(super) fn git_check(args: &[Arg]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        let v = args[i].value.as_str();
        match v {
            "--no-pager"
            | "-P"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--no-replace-objects"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs" => i += 1,
            "--version" => return Ok(()),
            _ if v.starts_with('-') => {
                return Err(format!("`git {v}` changes how git runs"));
            }
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return Err("`git` without a subcommand".into());
    };
    let sub = sub.value.as_str();
    let rest = &args[i + 1..];
    forbid(
        rest,
        "git",
        &[],
        &[
            "--output",
            "--ext-diff",
            "--exec-path",
            "--upload-pack",
            "--receive-pack",
            "--exec",
            "--open-files-in-pager",
            "--config-env",
        ],
    )?;
    let vals: Vec<&str> = rest.iter().map(|a| a.value.as_str()).collect();
    let listing = |allowed_flags: &[&str], selectors: &[&str]| -> Result<(), String> {
        let mut selecting = false;
        for v in &vals {
            if v.starts_with('-') {
                let key = v.split('=').next().unwrap_or(v);
                if selectors.contains(&key) {
                    selecting = true;
                } else if !allowed_flags.contains(&key) {
                    return Err(format!("`git {sub} {v}` may change the repository"));
                }
            } else if !selecting {
                return Err(format!("`git {sub} {v}` may change the repository"));
            }
        }
        Ok(())
    };
    match sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "blame"
        | "annotate" | "shortlog" | "describe" | "rev-list" | "cat-file" | "show-ref"
        | "diff-tree" | "diff-files" | "diff-index" | "merge-base" | "name-rev"
        | "count-objects" | "check-ignore" | "whatchanged" | "cherry" | "version"
        | "for-each-ref" | "show-branch" | "var" => Ok(()),
        "grep" => forbid(rest, "git grep", &['O'], &[]),
        "branch" => listing(
            &[
                "-a",
                "-r",
                "-v",
                "-vv",
                "--all",
                "--remotes",
                "--verbose",
                "--show-current",
                "--sort",
                "--format",
                "--color",
                "--no-color",
                "--column",
                "--no-column",
                "--abbrev",
                "--no-abbrev",
                "-i",
                "--ignore-case",
                "--omit-empty",
            ],
            &[
                "--list",
                "-l",
                "--merged",
                "--no-merged",
                "--contains",
                "--no-contains",
                "--points-at",
            ],
        ),
        "tag" => listing(
            &[
                "-n",
                "--sort",
                "--format",
                "--color",
                "--no-color",
                "--column",
                "--no-column",
                "-i",
                "--ignore-case",
            ],
            &[
                "--list",
                "-l",
                "--merged",
                "--no-merged",
                "--contains",
                "--no-contains",
                "--points-at",
            ],
        ),
        "remote" => match vals.as_slice() {
            [] | ["-v"] | ["--verbose"] => Ok(()),
            ["get-url", ..] => Ok(()),
            _ => Err(format!(
                "`git remote {}` may change or contact remotes",
                vals.join(" ")
            )),
        },
        "stash" => match vals.first() {
            Some(&"list") | Some(&"show") => Ok(()),
            _ => Err("`git stash` changes the working tree".into()),
        },
        "reflog" => match vals.first() {
            None | Some(&"show") => Ok(()),
            Some(v) if v.starts_with('-') => Ok(()),
            _ => Err("`git reflog` may change the reflog".into()),
        },
        "worktree" => match vals.as_slice() {
            ["list", ..] => Ok(()),
            _ => Err("`git worktree` may change worktrees".into()),
        },
        _ => Err(format!("`git {sub}` is not a known read-only git command")),
    }
}
