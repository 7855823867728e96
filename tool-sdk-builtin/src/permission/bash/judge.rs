//! Judging one simple command: the deny rules, the wrappers that run another command
//! (`env`, `timeout`, `xargs`, ...), and shells given a script as text.

use super::parse::{Arg, analyze, is_block_device, names_environ, short};
use super::safe_list::{has_short, long_matches, safe_check};
use super::{SimpleCommand, Verdict};

pub(super) enum Judged {
    Allow(String),
    Ask(String),
    Deny(String),
    Nested(Verdict),
}

pub(super) fn judge(
    argv: &[Arg],
    depth: usize,
    wrappers: &mut Vec<String>,
    dynamic: &mut bool,
    out: &mut Vec<SimpleCommand>,
) -> Judged {
    let push = |out: &mut Vec<SimpleCommand>, wrappers: &[String], dynamic: bool| {
        out.push(SimpleCommand {
            argv: argv.iter().map(|a| a.value.clone()).collect(),
            wrappers: wrappers.to_vec(),
            dynamic: dynamic || argv.iter().any(Arg::opaque),
        });
    };
    let Some(name) = argv.first() else {
        return Judged::Ask("empty command".into());
    };
    if name.dynamic {
        push(out, wrappers, *dynamic);
        return Judged::Ask("the command name is computed at run time".into());
    }
    let base = name.value.rsplit('/').next().unwrap_or("").to_string();
    let args = &argv[1..];
    if let Some(why) = deny_reason(&base, args) {
        push(out, wrappers, *dynamic);
        return Judged::Deny(why);
    }
    // Wrappers run another command: judge that one.
    match unwrap(&base, args) {
        Unwrap::NotWrapper => {}
        Unwrap::Alone => {
            push(out, wrappers, *dynamic);
            return if name.value.contains('/') || name.glob {
                Judged::Ask(format!("`{}` is not a plain command name", name.value))
            } else {
                Judged::Allow(base)
            };
        }
        Unwrap::Refuse(why) => {
            push(out, wrappers, *dynamic);
            return Judged::Ask(why);
        }
        Unwrap::Inner {
            start,
            appends,
            note,
        } => {
            wrappers.push(base.clone());
            let mut inner: Vec<Arg> = args[start..].to_vec();
            if appends {
                *dynamic = true;
                inner.push(Arg {
                    value: "…".into(),
                    dynamic: true,
                    glob: false,
                    lead_unknown: true,
                });
            }
            let judged = judge(&inner, depth, wrappers, dynamic, out);
            return match (judged, note) {
                (Judged::Allow(n), None) if !name.value.contains('/') => {
                    Judged::Allow(format!("{base} {n}"))
                }
                (Judged::Allow(_), Some(why)) => Judged::Ask(why),
                (Judged::Allow(_), None) => {
                    Judged::Ask(format!("`{}` is not a plain command name", name.value))
                }
                (other, _) => other,
            };
        }
    }
    push(out, wrappers, *dynamic);
    judge_plain(name, base, args, depth, *dynamic, out)
}

/// A command that runs no other: a shell's script is parsed and judged, any other command
/// must be on the safe list.
fn judge_plain(
    name: &Arg,
    base: String,
    args: &[Arg],
    depth: usize,
    dynamic: bool,
    out: &mut Vec<SimpleCommand>,
) -> Judged {
    // Shells and eval run text: parse it, so that a Deny inside is seen.
    if let Some(script) = script_of(&base, args) {
        let mut verdict = Verdict::default();
        match script {
            Some(s) => analyze(&s, depth + 1, &mut verdict, out),
            None => verdict.ask("the script is computed at run time".into()),
        }
        return Judged::Nested(verdict);
    }
    if name.value.contains('/') {
        return Judged::Ask(format!("`{}` is a path, not a known command", name.value));
    }
    if name.glob && name.value != "[" {
        return Judged::Ask("the command name holds a glob".into());
    }
    match safe_check(&base, args) {
        None => Judged::Ask(format!("`{base}` is not a known read-only command")),
        Some(Err(why)) => Judged::Ask(why),
        Some(Ok(())) => {
            if let Some(a) = args.iter().find(|a| names_environ(&a.value)) {
                Judged::Ask(format!(
                    "`{}` may be a process's environment, secrets included",
                    short(&a.value)
                ))
            } else if dynamic {
                Judged::Ask("runs with arguments only known at run time".into())
            } else {
                Judged::Allow(base)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Deny rules

fn deny_reason(base: &str, args: &[Arg]) -> Option<String> {
    let vals: Vec<&str> = args.iter().map(|a| a.value.as_str()).collect();
    match base {
        "sudo" | "su" | "doas" | "pkexec" | "run0" => {
            return Some(format!("`{base}` runs commands as another user"));
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            return Some(format!("`{base}` stops the machine"));
        }
        "init" | "telinit" if vals.iter().any(|v| matches!(*v, "0" | "6")) => {
            return Some(format!("`{base}` stops the machine"));
        }
        "systemctl"
            if vals.iter().any(|v| {
                matches!(
                    *v,
                    "poweroff" | "reboot" | "halt" | "kexec" | "suspend" | "hibernate"
                )
            }) =>
        {
            return Some("`systemctl` stops the machine".into());
        }
        b if b.starts_with("mkfs") || b == "mke2fs" || b == "mkswap" || b == "wipefs" => {
            return Some(format!("`{base}` formats a disk"));
        }
        "dd" => {
            if let Some(of) = vals.iter().find_map(|v| v.strip_prefix("of="))
                && is_block_device(of)
            {
                return Some(format!("`dd` writes to the device {of}"));
            }
        }
        "rm" => {
            if vals.contains(&"--no-preserve-root") {
                return Some("`rm --no-preserve-root`".into());
            }
            let recursive = args
                .iter()
                .any(|a| has_short(&a.value, &['r', 'R']) || long_matches(&a.value, "--recursive"));
            if recursive && let Some(t) = args.iter().find(|a| catastrophic_path(a)) {
                return Some(format!("recursively deletes {}", t.value));
            }
        }
        "chmod" | "chown" | "chgrp" => {
            let recursive = args
                .iter()
                .any(|a| has_short(&a.value, &['R']) || long_matches(&a.value, "--recursive"));
            if recursive && let Some(t) = args.iter().find(|a| catastrophic_path(a)) {
                return Some(format!("`{base}` recursively changes {}", t.value));
            }
        }
        "find" => {
            if vals.contains(&"-delete")
                && let Some(t) = args.iter().find(|a| catastrophic_path(a))
            {
                return Some(format!("`find -delete` deletes under {}", t.value));
            }
        }
        "shred" | "tee" | "cp" | "mv" | "truncate" | "blkdiscard" | "fdisk" | "sfdisk"
        | "parted" => {
            if let Some(d) = vals.iter().find(|v| is_block_device(v)) {
                return Some(format!("`{base}` writes to the device {d}"));
            }
        }
        _ => {}
    }
    None
}

/// `/`, `/*`, a top-level directory, `~` or `$HOME` (with `/`, `/*`, `/.` tails).
fn catastrophic_path(arg: &Arg) -> bool {
    if arg.lead_unknown && !arg.value.starts_with('$') {
        return false;
    }
    let mut v = arg.value.as_str();
    for home in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = v.strip_prefix(home) {
            let parts = components(rest);
            return match parts {
                Some(p) => p.is_empty() || (p.len() == 1 && p[0] == "*"),
                None => false,
            };
        }
    }
    if v.starts_with('~') && !v.contains('/') {
        return true; // ~user
    }
    if !v.starts_with('/') {
        return false;
    }
    v = v.trim_start_matches('/');
    match components(v) {
        Some(p) => p.len() <= 1,
        None => false,
    }
}

/// Path components after resolving `.` and `..`; `None` when `..` climbs past the start.
fn components(path: &str) -> Option<Vec<&str>> {
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------
// Wrappers

enum Unwrap {
    NotWrapper,
    /// The wrapper alone, running nothing else.
    Alone,
    /// An option this classifier does not follow.
    Refuse(String),
    /// Runs `args[start..]`.
    Inner {
        start: usize,
        /// Appends arguments read at run time (`xargs`).
        appends: bool,
        /// A reason to ask even when the inner command is safe.
        note: Option<String>,
    },
}

struct Opts {
    flags: &'static str,
    valued: &'static str,
    long_flags: &'static [&'static str],
    long_valued: &'static [&'static str],
}

/// Skips options; returns the index of the first operand.
fn skip_opts(args: &[Arg], spec: &Opts) -> Result<usize, String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.opaque() {
            return Err(format!("option `{}` is only known at run time", a.value));
        }
        let v = a.value.as_str();
        if v == "--" {
            return Ok(i + 1);
        }
        if let Some(long) = v.strip_prefix("--") {
            let key = long.split('=').next().unwrap_or("");
            if spec.long_flags.contains(&key) {
                i += 1;
                continue;
            }
            if spec.long_valued.contains(&key) {
                i += if long.contains('=') { 1 } else { 2 };
                continue;
            }
            return Err(format!("option `{v}` is not understood"));
        }
        if v.len() > 1 && v.starts_with('-') {
            let mut chars = v[1..].chars();
            let mut skip = 1;
            while let Some(c) = chars.next() {
                if spec.flags.contains(c) {
                    continue;
                }
                if spec.valued.contains(c) {
                    if chars.as_str().is_empty() {
                        skip = 2;
                    }
                    break;
                }
                return Err(format!("option `{v}` is not understood"));
            }
            i += skip;
            continue;
        }
        return Ok(i);
    }
    Ok(args.len())
}

fn inner_at(args: &[Arg], start: usize, appends: bool, note: Option<String>) -> Unwrap {
    if start >= args.len() {
        Unwrap::Alone
    } else {
        Unwrap::Inner {
            start,
            appends,
            note,
        }
    }
}

/// The options of a command that runs another (`env`, `timeout`, `xargs`...); `None` for any
/// other command.
fn wrapper_options(base: &str) -> Option<Opts> {
    Some(match base {
        "env" => Opts {
            flags: "i0v",
            valued: "u",
            long_flags: &["ignore-environment", "null", "debug"],
            long_valued: &["unset"],
        },
        "timeout" => Opts {
            flags: "v",
            valued: "sk",
            long_flags: &["preserve-status", "foreground", "verbose"],
            long_valued: &["signal", "kill-after"],
        },
        "nice" => Opts {
            flags: "",
            valued: "n",
            long_flags: &[],
            long_valued: &["adjustment"],
        },
        "nohup" | "builtin" => Opts {
            flags: "",
            valued: "",
            long_flags: &[],
            long_valued: &[],
        },
        "command" => Opts {
            flags: "pvV",
            valued: "",
            long_flags: &[],
            long_valued: &[],
        },
        "exec" => Opts {
            flags: "cl",
            valued: "a",
            long_flags: &[],
            long_valued: &[],
        },
        "time" => Opts {
            flags: "pvq",
            valued: "f",
            long_flags: &["portability", "verbose", "quiet"],
            long_valued: &["format"],
        },
        "stdbuf" => Opts {
            flags: "",
            valued: "ioe",
            long_flags: &[],
            long_valued: &["input", "output", "error"],
        },
        "xargs" => Opts {
            flags: "0rtpxo",
            valued: "ILnPsdEa",
            long_flags: &[
                "null",
                "no-run-if-empty",
                "verbose",
                "interactive",
                "exit",
                "open-tty",
            ],
            long_valued: &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
            ],
        },
        _ => return None,
    })
}

fn unwrap(base: &str, args: &[Arg]) -> Unwrap {
    let Some(spec) = wrapper_options(base) else {
        return Unwrap::NotWrapper;
    };
    // `nice -5 cmd`: numeric adjustment.
    let (lead, rest) = if base == "nice"
        && args.first().is_some_and(|a| {
            !a.opaque()
                && a.value.len() > 1
                && a.value.starts_with('-')
                && a.value[1..].bytes().all(|b| b.is_ascii_digit())
        }) {
        (1, &args[1..])
    } else {
        (0, args)
    };
    let mut start = match skip_opts(rest, &spec) {
        Ok(i) => i + lead,
        Err(why) => return Unwrap::Refuse(format!("`{base}`: {why}")),
    };
    let unwrapped = match base {
        "env" => {
            let mut sets = false;
            while start < args.len() && args[start].value.contains('=') && !args[start].lead_unknown
            {
                sets = true;
                start += 1;
            }
            let note = sets.then(|| "`env` sets environment variables".to_string());
            if start >= args.len() {
                return Unwrap::Refuse(note.unwrap_or_else(|| {
                    "`env` without a command prints every environment variable, secrets \
                     included"
                        .into()
                }));
            }
            inner_at(args, start, false, note)
        }
        "timeout" => inner_at(args, start + 1, false, None),
        "command"
            if args[..start].iter().any(|a| {
                a.value.starts_with('-') && (a.value.contains('v') || a.value.contains('V'))
            }) =>
        {
            Unwrap::Alone
        }
        "xargs" => {
            if start >= args.len() {
                Unwrap::Alone
            } else {
                inner_at(args, start, true, None)
            }
        }
        _ => inner_at(args, start, false, None),
    };
    // A word only known at run time before the wrapped command could split into more
    // words and change what runs (`timeout $T ls` with T="5 rm -rf ~").
    let fixed = match &unwrapped {
        Unwrap::Inner { start, .. } => &args[..*start],
        Unwrap::Alone => args,
        _ => &[],
    };
    if let Some(a) = fixed.iter().find(|a| a.opaque()) {
        return Unwrap::Refuse(format!(
            "`{base}` gets `{}`, only known at run time",
            short(&a.value)
        ));
    }
    unwrapped
}

/// For shells given `-c SCRIPT` and `eval`: `Some(Some(script))` when the script is static.
fn script_of(base: &str, args: &[Arg]) -> Option<Option<String>> {
    match base {
        "eval" => {
            if args.iter().any(Arg::opaque) {
                return Some(None);
            }
            Some(Some(
                args.iter()
                    .map(|a| a.value.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ))
        }
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "busybox" => {
            let mut i = 0;
            let mut has_c = false;
            while i < args.len() {
                let v = &args[i].value;
                if args[i].opaque() {
                    return Some(None);
                }
                if v == "--" {
                    i += 1;
                    break;
                }
                if v.starts_with('-') || v.starts_with('+') {
                    if !v.starts_with("--") && v.contains('c') {
                        has_c = true;
                    }
                    if matches!(v.as_str(), "-o" | "+o" | "-O" | "+O") {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                break;
            }
            if !has_c {
                return None;
            }
            match args.get(i) {
                Some(a) if !a.opaque() => Some(Some(a.value.clone())),
                _ => Some(None),
            }
        }
        _ => None,
    }
}
