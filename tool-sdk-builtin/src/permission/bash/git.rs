//! `git`: which subcommands and flags are read-only. What keeps a repository's configuration
//! from running programs is the Bash tool's environment (`builtin/shell_env.rs`).

use super::parse::Arg;
use super::safe_list::forbid;

/// What `git branch` may be given and still only list.
const BRANCH_FLAGS: &[&str] = &[
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
];
/// What `git tag` may be given and still only list.
const TAG_FLAGS: &[&str] = &[
    "-n",
    "--sort",
    "--format",
    "--color",
    "--no-color",
    "--column",
    "--no-column",
    "-i",
    "--ignore-case",
];
/// The flags after which `git branch` and `git tag` take patterns or commits, not a name to
/// create.
const LIST_SELECTORS: &[&str] = &[
    "--list",
    "-l",
    "--merged",
    "--no-merged",
    "--contains",
    "--no-contains",
    "--points-at",
];

/// Where the subcommand is, past git's own options; `None` for `git --version`.
fn subcommand_index(args: &[Arg]) -> Result<Option<usize>, String> {
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
            "--version" => return Ok(None),
            _ if v.starts_with('-') => {
                return Err(format!("`git {v}` changes how git runs"));
            }
            _ => break,
        }
    }
    Ok(Some(i))
}

pub(super) fn git_check(args: &[Arg]) -> Result<(), String> {
    let Some(i) = subcommand_index(args)? else {
        return Ok(());
    };
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
            // Merge drivers run, which the Bash tool does not disarm.
            "--remerge-diff",
            // Into submodules, whose filter and diff drivers the Bash tool did not read.
            "--submodule",
            "--ignore-submodules",
            "--recurse-submodules",
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
        | "for-each-ref" | "show-branch" => Ok(()),
        // `git var -l` lists the whole configuration, credentials in URLs included.
        "var" => match vals.as_slice() {
            [name] if !name.starts_with('-') => Ok(()),
            _ => Err("`git var` without a variable's name lists the configuration".into()),
        },
        "grep" => forbid(rest, "git grep", &['O'], &[]),
        "branch" => listing(BRANCH_FLAGS, LIST_SELECTORS),
        "tag" => listing(TAG_FLAGS, LIST_SELECTORS),
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
