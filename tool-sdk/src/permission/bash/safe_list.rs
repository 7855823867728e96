//! The safe list: commands known to be read-only, and the flags that would make them write
//! files or run programs.

use super::git::git_check;
use super::parse::{Arg, short};
use super::sed::sed_check;

pub(super) fn has_short(v: &str, chars: &[char]) -> bool {
    v.len() > 1
        && v.starts_with('-')
        && !v.starts_with("--")
        && v[1..].chars().any(|c| chars.contains(&c))
}

/// `arg` names the long option `name` (`--output`), possibly abbreviated as GNU getopt and
/// git allow (`--out=x`).
pub(super) fn long_matches(arg: &str, name: &str) -> bool {
    let Some(given) = arg.strip_prefix("--") else {
        return false;
    };
    let key = given.split('=').next().unwrap_or("");
    !key.is_empty() && name.trim_start_matches('-').starts_with(key)
}

pub(super) fn forbid(
    args: &[Arg],
    base: &str,
    short: &[char],
    long: &[&str],
) -> Result<(), String> {
    for a in args {
        if has_short(&a.value, short) || long.iter().any(|l| long_matches(&a.value, l)) {
            return Err(format!(
                "`{base} {}` can write files or run programs",
                a.value
            ));
        }
    }
    Ok(())
}

/// Arguments must be static; globs are fine unless they could expand to an option.
fn static_args(args: &[Arg], base: &str) -> Result<(), String> {
    for a in args {
        if a.dynamic || (a.glob && a.lead_unknown) {
            return Err(format!(
                "`{base}` gets the argument `{}` whose value is only known at run time",
                short(&a.value)
            ));
        }
    }
    Ok(())
}

/// Arguments must be static, but globs are fine: every option is harmless.
fn harmless_args(args: &[Arg], base: &str) -> Result<(), String> {
    for a in args {
        if a.dynamic {
            return Err(format!(
                "`{base}` gets the argument `{}` whose value is only known at run time",
                short(&a.value)
            ));
        }
    }
    Ok(())
}

fn max_operands(args: &[Arg], base: &str, n: usize) -> Result<(), String> {
    let operands = args
        .iter()
        .filter(|a| !a.value.starts_with('-') || a.value == "-")
        .count();
    if operands > n {
        return Err(format!(
            "`{base}` with {operands} operands may write a file"
        ));
    }
    Ok(())
}

pub(super) fn safe_check(base: &str, args: &[Arg]) -> Option<Result<(), String>> {
    let r = match base {
        "echo" | "true" | "false" | ":" | "pwd" => Ok(()),
        "printf" => match args.first() {
            Some(a) if a.opaque() || a.value.starts_with("-v") => {
                Err("`printf -v` assigns a variable".into())
            }
            _ => Ok(()),
        },
        "ls" | "cat" | "head" | "tail" | "wc" | "cut" | "tr" | "nl" | "tac" | "rev" | "fold"
        | "paste" | "expand" | "unexpand" | "column" | "od" | "hexdump" | "strings"
        | "basename" | "dirname" | "realpath" | "readlink" | "stat" | "du" | "df" | "uname"
        | "whoami" | "id" | "groups" | "nproc" | "uptime" | "tty" | "arch" | "printenv"
        | "which" | "whereis" | "type" | "seq" | "sleep" | "cmp" | "comm" | "diff" | "md5sum"
        | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum" | "cksum"
        | "sum" | "free" | "ps" | "locale" | "getconf" | "cd" | "jq" | "grep" | "egrep"
        | "fgrep" | "look" | "numfmt" => harmless_args(args, base),
        "test" | "[" => harmless_args(args, base).and_then(|()| {
            match args.iter().find(|a| {
                a.value.contains(['[', '$', '`']) && !(base == "[" && a.value == "]")
                    || a.value == "-v"
            }) {
                Some(a) => Err(format!("`{base} {}` may evaluate code", a.value)),
                None => Ok(()),
            }
        }),
        // BSD and macOS base64 write `-o FILE`.
        "base64" | "base32" => {
            static_args(args, base).and_then(|()| forbid(args, base, &['o'], &["--output"]))
        }
        // `-z` runs decompressors found on PATH.
        "file" => static_args(args, base).and_then(|()| {
            forbid(
                args,
                base,
                &['C', 'z', 'Z'],
                &["--compile", "--uncompress", "--uncompress-noreport"],
            )
        }),
        "sort" => static_args(args, base).and_then(|()| {
            forbid(
                args,
                base,
                &['o', 'T'],
                &[
                    "--output",
                    "--compress-program",
                    "--random-source",
                    "--temporary-directory",
                ],
            )
        }),
        "uniq" | "xxd" => static_args(args, base).and_then(|()| max_operands(args, base, 1)),
        "tree" => static_args(args, base).and_then(|()| forbid(args, base, &['o', 'R'], &[])),
        "hostname" => static_args(args, base).and_then(|()| {
            max_operands(args, base, 0)
                .and_then(|()| forbid(args, base, &['F', 'b'], &["--file", "--boot"]))
        }),
        "date" => static_args(args, base).and_then(|()| {
            forbid(args, base, &['s'], &["--set"])?;
            let mut prev_takes_value = false;
            for a in args {
                let v = a.value.as_str();
                if !prev_takes_value && !v.starts_with('-') && !v.starts_with('+') {
                    return Err(format!("`date {v}` may set the clock"));
                }
                prev_takes_value =
                    matches!(v, "-d" | "--date" | "-r" | "--reference" | "-f" | "--file");
            }
            Ok(())
        }),
        // `--pre` runs a program on each file, `-z` decompressors found on PATH.
        "rg" => static_args(args, base).and_then(|()| {
            forbid(
                args,
                base,
                &['z'],
                &["--pre", "--hostname-bin", "--search-zip"],
            )
        }),
        "find" => static_args(args, base).and_then(|()| {
            const BAD: &[&str] = &[
                "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
                "-fls",
            ];
            match args.iter().find(|a| BAD.contains(&a.value.as_str())) {
                Some(a) => Err(format!(
                    "`find {}` can run programs or write files",
                    a.value
                )),
                None => Ok(()),
            }
        }),
        "sed" => static_args(args, base).and_then(|()| sed_check(args)),
        "git" => static_args(args, base).and_then(|()| git_check(args)),
        "awk" | "gawk" | "mawk" | "nawk" => {
            Err(format!("`{base}` programs can run commands with system()"))
        }
        _ => return None,
    };
    Some(r)
}
