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
//! **Drivers.** Attribute-driven programs (`filter.<driver>.clean`/`smudge`/`process`,
//! `diff.<driver>.textconv`/`command`) are named by attributes (`.gitattributes`, and
//! `.git/info/attributes`, which outranks every other source), so no fixed key overrides
//! them: `git status` runs a clean filter on any file whose stat data looks changed, `git log
//! -p` a textconv. For a command the classifier would run without asking, the Bash tool
//! lists the drivers the repository's configuration defines ([`DRIVER_KEYS`], read with `git
//! config`, includes followed) and disarms each by name ([`auto_allowed_overrides`]); such a
//! command cannot `cd` to another repository, nor point git elsewhere (`-C`, `--git-dir`,
//! `GIT_DIR=`), since the classifier asks for those. It also keeps git out of submodules,
//! whose drivers were not listed. Commands the user approved run with the repository's
//! drivers, so that e.g. Git LFS keeps working for `git add`.
//! `merge.<driver>.driver` only runs in merges, which always ask.

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
    // The same for each signature format: `git log` verifies signatures with them (with
    // `log.showSignature`, or `%G?` in a format), and the repository chooses the format
    // by the signature it stores.
    ("gpg.openpgp.program", "gpg"),
    ("gpg.x509.program", "gpgsm"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("log.showSignature", "false"),
];

/// The configuration keys of program-running drivers, as a `git config --get-regexp` pattern.
pub(crate) const DRIVER_KEYS: &str =
    r"^(filter\..+\.(clean|smudge|process)|diff\..+\.(textconv|command))$";

/// Forced besides, for commands that run without asking: no look into submodules, whose
/// configuration (and drivers) were not read.
const AUTO_ALLOWED: &[(&str, &str)] = &[
    // Commits that changed are still shown; a dirty submodule work tree is not examined.
    ("diff.ignoreSubmodules", "dirty"),
    ("diff.submodule", "short"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
];

/// The overrides that disarm the drivers named in `listing` (what `git config --null
/// --name-only --get-regexp` printed for [`DRIVER_KEYS`]), plus [`AUTO_ALLOWED`]. A filter
/// without a command does nothing; `cat` converts text to itself; the external diff is the
/// one every command gets.
pub(crate) fn auto_allowed_overrides(listing: &[u8]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = AUTO_ALLOWED
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect();
    for key in listing.split(|&b| b == 0 || b == b'\n') {
        let Ok(key) = std::str::from_utf8(key) else {
            continue;
        };
        let value = if key.starts_with("filter.") {
            ""
        } else if key.ends_with(".textconv") {
            "cat"
        } else if key.ends_with(".command") {
            SAFE_EXTERNAL_DIFF
        } else {
            continue;
        };
        out.push((key.to_owned(), value.to_owned()));
    }
    out
}

/// Plain environment variables set alongside: they win over any configuration.
const PLAIN: &[(&str, &str)] = &[
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("GIT_EDITOR", "true"),
];

/// What a Bash command's environment gets, given the parent's `GIT_CONFIG_COUNT` and overrides
/// besides [`GIT_OVERRIDES`]: pairs to set, and variables to remove.
pub(crate) fn git_env(
    parent_count: Option<OsString>,
    extra: &[(String, String)],
) -> (Vec<(String, String)>, Vec<&'static str>) {
    let base = parent_count
        .and_then(|count| count.into_string().ok())
        .and_then(|count| count.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let overrides: Vec<(&str, &str)> = GIT_OVERRIDES
        .iter()
        .copied()
        .chain(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .collect();
    let mut set = Vec::with_capacity(overrides.len() * 2 + PLAIN.len() + 1);
    for (i, (key, value)) in overrides.iter().enumerate() {
        set.push((format!("GIT_CONFIG_KEY_{}", base + i), (*key).to_owned()));
        set.push((
            format!("GIT_CONFIG_VALUE_{}", base + i),
            (*value).to_owned(),
        ));
    }
    set.push((
        "GIT_CONFIG_COUNT".to_owned(),
        (base + overrides.len()).to_string(),
    ));
    for (key, value) in PLAIN {
        set.push(((*key).to_owned(), (*value).to_owned()));
    }
    // The environment variable would win over our `diff.external`.
    (set, vec!["GIT_EXTERNAL_DIFF"])
}

/// Adds the git overrides, and `extra` ones, to `command`'s environment.
pub(crate) fn apply(command: &mut tool_sdk_core::ToolCommand, extra: &[(String, String)]) {
    let (set, remove) = git_env(std::env::var_os("GIT_CONFIG_COUNT"), extra);
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
        let (set, _) = git_env(Some("2".into()), &[]);
        assert_eq!(set[0], ("GIT_CONFIG_KEY_2".into(), "core.fsmonitor".into()));
        let count = set.iter().find(|(k, _)| k == "GIT_CONFIG_COUNT").unwrap();
        assert_eq!(count.1, (2 + GIT_OVERRIDES.len()).to_string());
    }

    #[test]
    fn a_bogus_parent_count_is_replaced() {
        let (set, _) = git_env(Some("many".into()), &[]);
        assert_eq!(set[0].0, "GIT_CONFIG_KEY_0");
    }

    #[test]
    fn drivers_are_disarmed_by_name() {
        let listing =
            b"filter.lfs.clean\0filter.Ev.il.process\0diff.x y.textconv\0diff.d.command\0";
        let overrides = auto_allowed_overrides(listing);
        let get = |key: &str| {
            overrides
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("filter.lfs.clean"), Some(""));
        assert_eq!(get("filter.Ev.il.process"), Some(""));
        assert_eq!(get("diff.x y.textconv"), Some("cat"));
        assert_eq!(get("diff.d.command"), Some(SAFE_EXTERNAL_DIFF));
        assert_eq!(get("diff.ignoreSubmodules"), Some("dirty"));
    }
}
