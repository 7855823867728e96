//! Words of a command: unescaping, expansions that are plain, names a word may stand for.

use super::Arg;

pub(crate) fn short(s: &str) -> &str {
    if s.len() <= 80 {
        return s;
    }
    let mut end = 77;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

pub(super) fn unescape_unquoted(text: &str, arg: &mut Arg) {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => arg.value.push(n),
            },
            '*' | '?' | '[' => arg.push_meta(c),
            '{' if text.contains(',') || text.contains("..") => arg.push_meta(c),
            '$' | '`' => arg.push_unknown(&c.to_string()),
            _ => arg.value.push(c),
        }
    }
}

pub(super) fn unescape_double(text: &str, arg: &mut Arg) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&n @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    arg.value.push(n);
                }
                _ => arg.value.push('\\'),
            },
            '$' | '`' => arg.push_unknown(&c.to_string()),
            _ => arg.value.push(c),
        }
    }
}

/// The variable `$NAME`, `${NAME}`, `${#NAME}` or `${NAME:-…}` expands.
pub(super) fn expanded_name(t: &str) -> &str {
    let inner = match t.strip_prefix("${") {
        Some(rest) => rest.trim_start_matches(['#', '!']),
        None => t.strip_prefix('$').unwrap_or(t),
    };
    let end = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(inner.len());
    &inner[..end]
}

/// Whether `word` (a glob's pattern included) may name `/proc/<pid>/environ`, the environment
/// of a process: a last component that is or may match `environ`, below a `proc` component,
/// or a literal `environ` in a path relative to wherever the shell is.
pub(crate) fn names_environ(word: &str) -> bool {
    let parts: Vec<&str> = word.split('/').collect();
    let Some((last, dirs)) = parts.split_last() else {
        return false;
    };
    if dirs.is_empty() || !may_match(last, "environ") {
        return false;
    }
    *last == "environ"
        || dirs.iter().enumerate().any(|(i, p)| {
            *p == "proc"
                || (may_match(p, "proc")
                    && (i == 0 || dirs[i - 1].is_empty() || dirs[i - 1] == ".."))
        })
}

/// Whether the word `pattern`, globbed by the shell, may match `name`. A pattern too odd
/// to compile may match anything.
pub(crate) fn may_match(pattern: &str, name: &str) -> bool {
    if !pattern.contains(['*', '?', '[', '{']) {
        return pattern == name;
    }
    // Quoting is gone from the value: a backslash stands for any character, never an escape
    // that would narrow the match.
    let pattern = pattern.replace('\\', "?");
    globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .map_or(true, |g| g.compile_matcher().is_match(name))
}

pub(super) fn trivial_expansion(t: &str) -> bool {
    let Some(inner) = t.strip_prefix("${").and_then(|s| s.strip_suffix('}')) else {
        return false;
    };
    !inner.is_empty()
        && (inner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || matches!(inner, "?" | "#" | "@" | "*" | "$" | "!" | "-"))
}

pub(super) fn constant_arithmetic(t: &str) -> bool {
    let inner = t
        .strip_prefix("$((")
        .and_then(|s| s.strip_suffix("))"))
        .or_else(|| t.strip_prefix("$[").and_then(|s| s.strip_suffix(']')));
    inner.is_some_and(|i| {
        i.bytes()
            .all(|b| b.is_ascii_digit() || b" \t()+-*/%<>=!&|^~".contains(&b))
    })
}

/// `[ … ]` / `[[ … ]]` over literal words only: nothing is expanded or evaluated.
pub(super) fn simple_test(t: &str) -> bool {
    let inner = t
        .strip_prefix("[[")
        .and_then(|s| s.strip_suffix("]]"))
        .or_else(|| t.strip_prefix('[').and_then(|s| s.strip_suffix(']')));
    inner.is_some_and(|i| {
        !i.contains(['$', '`', '[', ']', '(', ')', '\\', '<', '>'])
            && !i.split_whitespace().any(|w| matches!(w, "-v" | "-R"))
    })
}

pub(crate) fn is_block_device(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/dev/") else {
        return false;
    };
    const PREFIXES: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "mapper/", "loop", "md", "dm-", "sr",
        "nbd", "rbd", "zram", "mem", "kmem", "port", "fd0", "block/",
    ];
    PREFIXES.iter().any(|p| rest.starts_with(p))
}
