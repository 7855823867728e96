//! Where a shell command the classifier vouches for reads, judged by the sandbox's read check:
//! the fact that makes the Read tool refuse `~/.ssh/id_rsa` also makes `cat ~/.ssh/id_rsa`
//! ask.
//!
//! The classifier knows which commands only read, not which of their words are files, so
//! every word is taken as a path the command might open (`--file=PATH` and `-fPATH` too):
//! relative to the shell's directory and to every directory the command `cd`s into, a leading
//! `~` as the home directory and as a literal name, a glob as itself and as each entry it
//! matches (more entries than bash would: dot files, a backslash as any character). A word
//! that is no path at all names a file inside the working directory, which passes. Where a
//! guess is needed it is the one that asks.

use std::path::{Path, PathBuf};

use super::bash::SimpleCommand;
use tool_sdk_core::sandbox::Sandbox;

/// Commands whose words are never files they open.
const NO_FILES: &[&str] = &[
    "echo", "printf", "true", "false", ":", "pwd", "seq", "sleep", "basename", "dirname", "which",
    "whereis", "type", "printenv", "uname", "whoami", "id", "groups", "nproc", "uptime", "tty",
    "arch", "locale", "getconf", "numfmt", "hostname", "test", "[",
];

/// Devices that hold nothing to read, which tools often name.
const HARMLESS_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/stdin",
    "/dev/random",
    "/dev/urandom",
];

/// Options that make a directory walk follow symbolic links, wherever they lead: short
/// letters and long names per command.
const FOLLOWS_LINKS: &[(&str, &[char], &[&str])] = &[
    ("grep", &['R'], &["--dereference-recursive"]),
    ("egrep", &['R'], &["--dereference-recursive"]),
    ("fgrep", &['R'], &["--dereference-recursive"]),
    ("rg", &['L'], &["--follow"]),
    ("find", &[], &["-L", "-follow"]),
    ("du", &['L'], &["--dereference"]),
    ("ls", &['L'], &["--dereference"]),
    ("tree", &['l'], &[]),
    // Compares what links in both trees point to, printing the differences.
    ("diff", &['r'], &["--recursive"]),
];

/// Most (word, directory) pairs checked, and most directory entries a glob may visit, before
/// the command asks instead.
const MAX_CHECKS: usize = 2_000;
const MAX_GLOB_ENTRIES: usize = 10_000;
/// Most directories relative words are taken from (each `cd` may double them).
const MAX_DIRS: usize = 64;

/// The first place `commands` (and `inputs`, the files of `<` redirections) may read that
/// `sandbox` does not let the Read tool read, with why; `None` when every one passes.
/// Relative words are taken from `shell_dir`, where the command starts.
pub(super) fn read_outside(
    commands: &[SimpleCommand],
    inputs: &[String],
    sandbox: &Sandbox,
    shell_dir: &Path,
) -> Option<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut dirs = vec![shell_dir.to_path_buf()];
    let mut words: Vec<&str> = Vec::new();
    let mut reads_dirs = false;
    for command in commands {
        let Some((name, args)) = command.argv.split_first() else {
            continue;
        };
        let name = name.rsplit('/').next().unwrap_or(name);
        if name == "cd" {
            // Later words may be relative to any directory a `cd` reaches (a subshell's `cd`
            // ends with it, so the old directories stay too).
            let target = args.iter().find(|a| !a.starts_with('-') || *a == "-");
            match target.map(String::as_str) {
                Some("-") => return Some("`cd -` leads where the classifier cannot see".into()),
                Some(t) => {
                    let reached: Vec<PathBuf> = interpretations(t, home.as_deref())
                        .iter()
                        .flat_map(|t| dirs.iter().map(move |d| d.join(t)))
                        .collect();
                    dirs.extend(reached);
                }
                None => dirs.extend(home.clone()),
            }
            if dirs.len() > MAX_DIRS {
                return Some("changes directory more often than is followed".into());
            }
        }
        if !NO_FILES.contains(&name) {
            if let Some(flag) = follows_links(name, args) {
                return Some(format!(
                    "`{name} {flag}` follows symbolic links, which may lead outside"
                ));
            }
            reads_dirs |= name != "cd";
            words.extend(args.iter().map(String::as_str));
        }
    }
    // Commands without a path read the directory they run in (`ls`, `grep -r x`).
    if reads_dirs && let Some(why) = dirs.iter().find_map(|dir| check(sandbox, dir)) {
        return Some(why);
    }
    words.extend(inputs.iter().map(String::as_str));
    if words.len().saturating_mul(dirs.len()) > MAX_CHECKS {
        return Some("names more paths than are checked".into());
    }
    for word in words {
        if HARMLESS_DEVICES.contains(&word) {
            continue;
        }
        for candidate in candidates(word) {
            for path in interpretations(candidate, home.as_deref()) {
                for dir in &dirs {
                    if let Some(why) = check(sandbox, &dir.join(&path)) {
                        return Some(why);
                    }
                }
            }
        }
    }
    None
}

/// The option of `args` that makes `name` follow symbolic links while it walks (a glob in an
/// option's place may be one).
fn follows_links<'a>(name: &str, args: &'a [String]) -> Option<&'a str> {
    let (_, short, long) = FOLLOWS_LINKS.iter().find(|(n, ..)| *n == name)?;
    let follows = |a: &str| {
        if !a.starts_with('-') {
            return false;
        }
        if long.contains(&a) || a.contains(['*', '?', '[', '{']) {
            return true;
        }
        match a.strip_prefix("--") {
            Some(given) => {
                let key = given.split('=').next().unwrap_or("");
                !key.is_empty()
                    && long
                        .iter()
                        .any(|l| l.trim_start_matches('-').starts_with(key))
            }
            None => a[1..].chars().any(|c| short.contains(&c)),
        }
    };
    args.iter()
        .take_while(|a| *a != "--")
        .find(|a| follows(a))
        .map(String::as_str)
}

/// The paths a word may stand for: itself, the value of `--opt=VALUE` or `a=VALUE`, and the
/// path glued to a short option (`-f/etc/shadow`).
fn candidates(word: &str) -> Vec<&str> {
    let mut out = vec![word];
    if let Some((_, value)) = word.split_once('=') {
        out.push(value);
    }
    if word.starts_with('-')
        && let Some(at) = word.find(['/', '~', '.'])
        && !out.contains(&&word[at..])
    {
        out.push(&word[at..]);
    }
    out.retain(|c| !c.is_empty());
    out
}

/// A candidate as a path: itself, and with a leading `~` as the home directory (the
/// classifier's words do not say whether it was quoted). `~user` may be anyone's home.
fn interpretations(candidate: &str, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from(candidate)];
    if let Some(rest) = candidate.strip_prefix('~') {
        match (rest.strip_prefix('/'), home) {
            (Some(below), Some(home)) => out.push(home.join(below)),
            _ if rest.is_empty() => out.extend(home.map(Path::to_path_buf)),
            // `~user/...`: another user's home; a path outside any root stands for it.
            _ => out.push(PathBuf::from("/")),
        }
    }
    out
}

/// Checks one path, and what it matches when it is a glob.
fn check(sandbox: &Sandbox, path: &Path) -> Option<String> {
    let refused = |p: &Path| {
        sandbox
            .check_read(p)
            .err()
            .map(|e| format!("may read {}: {e}", p.display()))
    };
    if let Some(why) = refused(path) {
        return Some(why);
    }
    let text = path.to_string_lossy();
    if !text.contains(['*', '?', '[', '{']) {
        return None;
    }
    let mut budget = MAX_GLOB_ENTRIES;
    for pattern in expand_braces(&text) {
        match glob_matches(Path::new(&pattern), &mut budget) {
            Some(matches) => {
                if let Some(why) = matches.iter().find_map(|m| refused(m)) {
                    return Some(why);
                }
            }
            None => return Some(format!("the glob {text} matches too many files to check")),
        }
    }
    None
}

/// The entries `pattern` (absolute) matches, component by component; `None` when more than
/// `budget` directory entries would have to be read.
fn glob_matches(pattern: &Path, budget: &mut usize) -> Option<Vec<PathBuf>> {
    let mut current = vec![PathBuf::new()];
    for component in pattern.components() {
        let part = component.as_os_str().to_string_lossy();
        if !part.contains(['*', '?', '[']) {
            for path in &mut current {
                path.push(component);
            }
            continue;
        }
        let mut next = Vec::new();
        for dir in &current {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                *budget = budget.checked_sub(1)?;
                let name = entry.file_name();
                if super::bash::glob_may_match(&part, &name.to_string_lossy()) {
                    next.push(dir.join(name));
                }
            }
        }
        current = next;
    }
    Some(current)
}

/// Bash's brace expansion, `a{b,c}d` → `abd`, `acd`, nested and repeated; a sequence
/// `{1..9}` becomes `*` (it matches what the sequence names, and more). At most 256 words:
/// past that the rest stays unexpanded, which the glob matcher reads as alternatives.
fn expand_braces(word: &str) -> Vec<String> {
    let mut done = Vec::new();
    let mut todo = vec![word.to_owned()];
    while let Some(w) = todo.pop() {
        if done.len() + todo.len() >= 256 {
            done.push(w);
            continue;
        }
        match split_braces(&w) {
            Some((head, alternatives, tail)) => {
                for alt in alternatives {
                    todo.push(format!("{head}{alt}{tail}"));
                }
            }
            None => done.push(w),
        }
    }
    done
}

/// The first brace group of `word` with a top-level comma or `..`: text before it, its
/// alternatives, text after it.
fn split_braces(word: &str) -> Option<(&str, Vec<String>, &str)> {
    let bytes = word.as_bytes();
    for (open, _) in word.match_indices('{') {
        let mut depth = 0usize;
        let mut commas = Vec::new();
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b',' if depth == 1 => commas.push(i),
                b'}' => {
                    depth -= 1;
                    if depth > 0 {
                        continue;
                    }
                    let inner = &word[open + 1..i];
                    let alternatives = if !commas.is_empty() {
                        let mut parts = Vec::new();
                        let mut start = open + 1;
                        for c in commas.iter().copied().chain([i]) {
                            parts.push(word[start..c].to_owned());
                            start = c + 1;
                        }
                        parts
                    } else if inner.contains("..") {
                        vec!["*".to_owned()]
                    } else {
                        break;
                    };
                    return Some((&word[..open], alternatives, &word[i + 1..]));
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_expand_like_bash() {
        let mut words = expand_braces("a{b,c{d,e}}f");
        words.sort();
        assert_eq!(words, ["abf", "acdf", "acef"]);
        assert_eq!(expand_braces("x{1..3}"), ["x*"]);
        assert_eq!(expand_braces("{x}"), ["{x}"]);
    }

    #[test]
    fn every_spelling_of_a_path_is_judged_by_the_sandbox() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let (ws, out) = (
            ws.path().canonicalize().unwrap(),
            out.path().canonicalize().unwrap(),
        );
        std::fs::write(out.join("secret"), "s").unwrap();
        std::fs::create_dir(ws.join("sub")).unwrap();
        std::os::unix::fs::symlink(out.join("secret"), ws.join("link")).unwrap();
        std::os::unix::fs::symlink(&out, ws.join("sub/door")).unwrap();
        let sandbox = Sandbox::new(&ws).unwrap();
        let judge = |command: &str| {
            let command = command.replace("OUT", &out.to_string_lossy());
            let analysis = super::super::bash::analyze_command(&command);
            read_outside(
                analysis.commands.as_ref().unwrap(),
                &analysis.input_files,
                &sandbox,
                &ws,
            )
        };
        for inside in [
            "cat sub/new.txt",
            "grep -rn foo sub",
            "sed -n s/a/b/p f",
            "date +%Y/%m",
            "diff /dev/null f",
            "echo OUT/secret",
            "ls -la",
            "cd sub && ls",
        ] {
            assert_eq!(judge(inside), None, "{inside}");
        }
        for outside in [
            "cat OUT/secret",
            "cat link",
            "cat l*",
            "cat sub/*/secret",
            "cat sub/do?r/secret",
            "cat {a,link}",
            "cd sub && cat door/secret",
            "cd sub/door && ls",
            "grep --file=OUT/secret x",
            "grep -fOUT/secret x",
            "cat < link",
            "cat ~nobody/x",
            "ls ..",
        ] {
            assert!(judge(outside).is_some(), "{outside}");
        }
    }

    #[test]
    fn walks_that_follow_links() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            follows_links("grep", &args(&["-Rn", "x", "."])),
            Some("-Rn")
        );
        assert_eq!(
            follows_links("grep", &args(&["--dereference-r", "x"])),
            Some("--dereference-r")
        );
        assert_eq!(follows_links("find", &args(&["-L", "."])), Some("-L"));
        assert_eq!(
            follows_links("diff", &args(&["-ru", "a", "b"])),
            Some("-ru")
        );
        assert_eq!(follows_links("grep", &args(&["-[R]", "x"])), Some("-[R]"));
        assert_eq!(follows_links("grep", &args(&["-rn", "x", "."])), None);
        assert_eq!(follows_links("grep", &args(&["-rn", "--", "-R"])), None);
        assert_eq!(follows_links("ls", &args(&["-la"])), None);
        assert_eq!(follows_links("cat", &args(&["-L"])), None);
    }

    #[test]
    fn words_as_paths() {
        assert_eq!(
            candidates("--file=/etc/shadow"),
            ["--file=/etc/shadow", "/etc/shadow"]
        );
        assert_eq!(
            candidates("-f/etc/shadow"),
            ["-f/etc/shadow", "/etc/shadow"]
        );
        let home = Path::new("/home/u");
        assert_eq!(
            interpretations("~/.ssh/id_rsa", Some(home)),
            [PathBuf::from("~/.ssh/id_rsa"), home.join(".ssh/id_rsa")]
        );
    }
}
