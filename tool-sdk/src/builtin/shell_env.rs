//! Environment variables that keep a hostile repository's configuration from running
//! programs when a Bash command calls git.
//!
//! A working tree the agent did not create may carry a `.git/config` that runs a program on
//! the most innocent command: `core.fsmonitor` on `git status`, `diff.external` on `git diff`,
//! `core.pager`, hooks, `core.sshCommand` on a fetch. Git reads `GIT_CONFIG_COUNT`,
//! `GIT_CONFIG_KEY_<n>` and `GIT_CONFIG_VALUE_<n>` (git 2.31 and later) like `git -c`: they
//! win over the system, global and repository files, for every git the script runs.
//!
//! Entries the parent environment already has are kept: ours are appended after them, and so
//! win over them too. A parent `GIT_CONFIG_COUNT` that is not a number would make every git
//! fail; it is replaced, and its entries are then ignored.
//!
//! **`diff.external`.** An empty value does not switch external diffs off: git then tries to
//! run the empty command and `git diff` fails. It is set instead to [`SAFE_EXTERNAL_DIFF`], a
//! small `diff -u` that prints a unified diff with git's header. `git diff` output therefore
//! loses git's own extras (the `index` and mode lines, colour, `--word-diff`, `-w`, `-U<n>`);
//! `git diff --no-ext-diff` still gives the built-in diff, and `git log -p`, `git show`,
//! `git format-patch` and `git add -p` never use an external diff.
//!
//! **Not covered.** Attribute-driven programs (`filter.<driver>.clean`/`smudge`,
//! `diff.<driver>.textconv`/`command`, `merge.<driver>.driver`) are named by
//! `.gitattributes`, so no fixed key can override them; `include.path` still pulls in other
//! files. The OS containment of the Bash tool limits what such a program can do.

use std::ffi::OsString;

/// The external diff every git diff of a Bash command uses: `diff -u` with git's header, so a
/// repository's own `diff.external` never runs. Git calls it as
/// `path old-file old-hex old-mode new-file new-hex new-mode`, through `sh -c '<this> "$@"'`.
pub(crate) const SAFE_EXTERNAL_DIFF: &str = r#"f(){ a="a/$1"; b="b/$1"; [ "$2" = /dev/null ] && a=/dev/null; [ "$5" = /dev/null ] && b=/dev/null; printf 'diff --git a/%s b/%s\n' "$1" "$1"; diff -u --label "$a" --label "$b" -- "$2" "$5"; [ $? -le 1 ]; }; f"#;

/// The configuration forced on every git a Bash command runs.
pub(crate) const GIT_OVERRIDES: &[(&str, &str)] = &[
    // `git status` and friends would run it as a hook.
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("diff.external", SAFE_EXTERNAL_DIFF),
    // No hooks at all: nothing lives at /dev/null/<hook>.
    ("core.hooksPath", "/dev/null"),
    ("core.sshCommand", "ssh"),
    ("core.askPass", ""),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    // An empty value empties the list of helpers the files configured.
    ("credential.helper", ""),
    ("protocol.ext.allow", "never"),
    ("uploadpack.packObjectsHook", ""),
    ("gpg.program", "gpg"),
];

/// Plain environment variables set alongside: they win over any configuration.
const PLAIN: &[(&str, &str)] = &[
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("GIT_EDITOR", "true"),
];

/// What a Bash command's environment gets, given the parent's `GIT_CONFIG_COUNT`: pairs to
/// set, and variables to remove.
pub(crate) fn git_env(
    parent_count: Option<OsString>,
) -> (Vec<(String, String)>, Vec<&'static str>) {
    let base = parent_count
        .and_then(|count| count.into_string().ok())
        .and_then(|count| count.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut set = Vec::with_capacity(GIT_OVERRIDES.len() * 2 + PLAIN.len() + 1);
    for (i, (key, value)) in GIT_OVERRIDES.iter().enumerate() {
        set.push((format!("GIT_CONFIG_KEY_{}", base + i), (*key).to_owned()));
        set.push((
            format!("GIT_CONFIG_VALUE_{}", base + i),
            (*value).to_owned(),
        ));
    }
    set.push((
        "GIT_CONFIG_COUNT".to_owned(),
        (base + GIT_OVERRIDES.len()).to_string(),
    ));
    for (key, value) in PLAIN {
        set.push(((*key).to_owned(), (*value).to_owned()));
    }
    // The environment variable would win over our `diff.external`.
    (set, vec!["GIT_EXTERNAL_DIFF"])
}

/// Adds the git overrides to `command`'s environment.
pub(crate) fn apply(command: &mut crate::ToolCommand) {
    let (set, remove) = git_env(std::env::var_os("GIT_CONFIG_COUNT"));
    for key in remove {
        command.env_remove(key);
    }
    command.envs(set);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_after_the_parents_entries() {
        let (set, _) = git_env(Some("2".into()));
        assert_eq!(set[0], ("GIT_CONFIG_KEY_2".into(), "core.fsmonitor".into()));
        let count = set.iter().find(|(k, _)| k == "GIT_CONFIG_COUNT").unwrap();
        assert_eq!(count.1, (2 + GIT_OVERRIDES.len()).to_string());
    }

    #[test]
    fn a_bogus_parent_count_is_replaced() {
        let (set, _) = git_env(Some("many".into()));
        assert_eq!(set[0].0, "GIT_CONFIG_KEY_0");
    }
}
