//! The safe list: commands known to be read-only, and the flags that would make them write
//! files or run programs.

use super::git::git_check;
use super::parse::{Arg, may_match, short};
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
        if has_short(&a.value, short)
            || long.iter().any(|l| long_matches(&a.value, l))
            || glob_may_be(a, short, long)
        {
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

/// Whether `a`, a glob that starts with `-`, may expand to one of these options (a file named
/// `-o` or `--output=x` away from writing): all an expansion keeps is the glob's literal
/// start, so it is judged as every option that start allows.
fn glob_may_be(a: &Arg, short: &[char], long: &[&str]) -> bool {
    if !a.glob || !a.value.starts_with('-') {
        return false;
    }
    let literal = &a.value[..a.value.find(['*', '?', '[', '{']).unwrap_or(a.value.len())];
    match literal.strip_prefix("--") {
        // `--format=%G?` varies only the value.
        Some(key) => {
            !key.contains('=')
                && long
                    .iter()
                    .any(|l| l.trim_start_matches('-').starts_with(key))
        }
        None => !short.is_empty() || (literal == "-" && !long.is_empty()),
    }
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

/// At most `n` operands, for commands whose operand after the `n`th is a file they write
/// (`uniq IN OUT`). Every word after `--` is an operand, and a glob may expand to any number
/// of them (`-*` to `--` and the names after it).
fn max_operands(args: &[Arg], base: &str, n: usize) -> Result<(), String> {
    let mut operands = 0;
    let mut options_end = false;
    for a in args {
        let v = a.value.as_str();
        if a.glob && n > 0 {
            return Err(format!(
                "`{base} {}`: the glob may expand to several files, and `{base}` writes the \
                 one after the first {n}",
                short(v)
            ));
        }
        if !options_end && v == "--" {
            options_end = true;
            continue;
        }
        if options_end || !v.starts_with('-') || v == "-" {
            operands += 1;
        }
    }
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
        | "whoami" | "id" | "groups" | "nproc" | "uptime" | "tty" | "arch" | "which"
        | "whereis" | "type" | "seq" | "sleep" | "cmp" | "comm" | "diff" | "md5sum" | "sha1sum"
        | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum" | "cksum" | "sum"
        | "free" | "locale" | "getconf" | "cd" | "grep" | "egrep" | "fgrep" | "look" | "numfmt" => {
            harmless_args(args, base)
        }
        "printenv" => harmless_args(args, base).and_then(|()| printenv_check(args)),
        "ps" => harmless_args(args, base).and_then(|()| ps_check(args)),
        "jq" => harmless_args(args, base).and_then(|()| jq_check(args)),
        "test" | "[" => harmless_args(args, base).and_then(|()| test_check(args, base)),
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
        "sort" => static_args(args, base).and_then(|()| sort_check(args)),
        "uniq" | "xxd" => static_args(args, base).and_then(|()| max_operands(args, base, 1)),
        "tree" => static_args(args, base).and_then(|()| forbid(args, base, &['o', 'R'], &[])),
        "hostname" => static_args(args, base).and_then(|()| {
            max_operands(args, base, 0)
                .and_then(|()| forbid(args, base, &['F', 'b'], &["--file", "--boot"]))
        }),
        "date" => static_args(args, base).and_then(|()| date_check(args)),
        // `--pre` runs a program on each file, `-z` decompressors found on PATH.
        "rg" => static_args(args, base).and_then(|()| {
            forbid(
                args,
                base,
                &['z'],
                &["--pre", "--hostname-bin", "--search-zip"],
            )
        }),
        "find" => static_args(args, base).and_then(|()| find_check(args)),
        "sed" => static_args(args, base).and_then(|()| sed_check(args)),
        "git" => static_args(args, base).and_then(|()| git_check(args)),
        "awk" | "gawk" | "mawk" | "nawk" => {
            Err(format!("`{base}` programs can run commands with system()"))
        }
        _ => return None,
    };
    Some(r)
}

/// `test` and `[`: an operand that may be evaluated as code (`-v`, an array subscript).
fn test_check(args: &[Arg], base: &str) -> Result<(), String> {
    match args.iter().find(|a| {
        a.value.contains(['[', '$', '`']) && !(base == "[" && a.value == "]") || a.value == "-v"
    }) {
        Some(a) => Err(format!("`{base} {}` may evaluate code", a.value)),
        None => Ok(()),
    }
}

/// `sort`: no output file, no helper program, no list of files to read.
fn sort_check(args: &[Arg]) -> Result<(), String> {
    forbid(
        args,
        "sort",
        &['o', 'T'],
        &[
            "--output",
            "--compress-program",
            "--random-source",
            "--temporary-directory",
        ],
    )?;
    // Prints the files a list names: paths no check sees.
    let list = ["--files0-from"];
    let names_list = |a: &&Arg| long_matches(&a.value, list[0]) || glob_may_be(a, &[], &list);
    match args.iter().find(names_list) {
        Some(a) => Err(format!("`sort {}` reads the files a list names", a.value)),
        None => Ok(()),
    }
}

/// `date`: nothing that sets the clock.
fn date_check(args: &[Arg]) -> Result<(), String> {
    forbid(args, "date", &['s'], &["--set"])?;
    let mut prev_takes_value = false;
    for a in args {
        let v = a.value.as_str();
        if !prev_takes_value && !v.starts_with('-') && !v.starts_with('+') {
            return Err(format!("`date {v}` may set the clock"));
        }
        prev_takes_value = matches!(v, "-d" | "--date" | "-r" | "--reference" | "-f" | "--file");
    }
    Ok(())
}

/// `find`: nothing that runs a program or writes a file.
fn find_check(args: &[Arg]) -> Result<(), String> {
    const BAD: &[&str] = &[
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    ];
    // A glob is every name it may expand to (`-exe[c]`, should a file `-exec` exist).
    let bad = |a: &Arg| {
        BAD.iter().any(|b| match a.glob {
            true => may_match(&a.value, b),
            false => a.value == *b,
        })
    };
    match args.iter().find(|a| bad(a)) {
        Some(a) => Err(format!(
            "`find {}` can run programs or write files",
            a.value
        )),
        None => Ok(()),
    }
}

/// `printenv NAME…` prints those variables; alone, or given a name that looks secret (or a
/// glob, which a file named after a secret would fill), it reveals secrets.
fn printenv_check(args: &[Arg]) -> Result<(), String> {
    let names: Vec<&Arg> = args.iter().filter(|a| !a.value.starts_with('-')).collect();
    if names.is_empty() {
        return Err("`printenv` alone prints every environment variable, secrets included".into());
    }
    for a in names {
        if a.glob {
            return Err(format!(
                "`printenv {}`: the glob may expand to the name of a secret",
                short(&a.value)
            ));
        }
        if let Some(mark) = crate::permission::secret_marker(&a.value) {
            return Err(format!(
                "`printenv {}` prints a variable whose name ({mark}) says it holds a secret",
                a.value
            ));
        }
    }
    Ok(())
}

/// BSD-style `ps e` (in a word without a dash: `ps eww`, `ps auxe`) prints each process's
/// environment; `-e` only selects every process. The values of `-o`, `-p` and the like are
/// skipped.
fn ps_check(args: &[Arg]) -> Result<(), String> {
    let mut skip = false;
    for a in args {
        let v = a.value.as_str();
        if std::mem::take(&mut skip) {
            continue;
        }
        if let Some(long) = v.strip_prefix("--") {
            if long.contains("env") {
                return Err(format!("`ps {v}` may print processes' environments"));
            }
            continue;
        }
        if v.starts_with('-') {
            skip = matches!(
                v,
                "-o" | "-O" | "-p" | "-q" | "-u" | "-U" | "-g" | "-G" | "-C" | "-t" | "-s"
            );
            continue;
        }
        if a.glob || v.contains('e') {
            return Err(format!(
                "`ps {}` may print processes' environments, secrets included",
                short(v)
            ));
        }
    }
    Ok(())
}

/// jq's `$ENV` and `env` hold the environment. The program is the first operand (after
/// options, some of which take one or two values); a program read from a file (`-f`) or one a
/// glob could supply is not seen, so it asks.
fn jq_check(args: &[Arg]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let v = a.value.as_str();
        if a.glob {
            return Err(format!(
                "`jq {}`: the glob may expand to the program",
                short(v)
            ));
        }
        match v {
            "--arg" | "--argjson" | "--slurpfile" | "--rawfile" => i += 3,
            "--indent" | "-L" => i += 2,
            "-f" | "--from-file" => return Err("`jq -f` runs a program read from a file".into()),
            "--args" | "--jsonargs" => i += 1,
            "--" => return jq_program(args.get(i + 1)),
            _ if v.starts_with("--") => i += 1,
            _ if v.len() > 1 && v.starts_with('-') => {
                if v.contains('f') {
                    return Err(format!("`jq {v}` runs a program read from a file"));
                }
                i += 1;
            }
            _ => return jq_program(Some(a)),
        }
    }
    Ok(())
}

fn jq_program(program: Option<&Arg>) -> Result<(), String> {
    let Some(program) = program else {
        return Ok(());
    };
    let p = program.value.as_str();
    if p.contains("$ENV") || has_word(p, "env") {
        return Err(format!(
            "the jq program `{}` reads the environment, secrets included",
            short(p)
        ));
    }
    // Modules and data are found from `~/.jq`, outside the working directory.
    if has_word(p, "import") || has_word(p, "include") {
        return Err(format!(
            "the jq program `{}` reads modules or data from other files",
            short(p)
        ));
    }
    Ok(())
}

/// `name` as a word of a jq program (not a field such as `.env`).
fn has_word(program: &str, name: &str) -> bool {
    let bytes = program.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    program.match_indices(name).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + name.len()).copied();
        !before.is_some_and(|b| word(b) || b == b'.') && !after.is_some_and(word)
    })
}
