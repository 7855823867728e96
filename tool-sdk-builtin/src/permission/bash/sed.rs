//! `sed`: the flags and script commands that neither edit files nor run programs.

use super::parse::{Arg, short};

pub(super) fn sed_check(args: &[Arg]) -> Result<(), String> {
    let mut scripts: Vec<&str> = Vec::new();
    let mut operands = 0;
    let mut i = 0;
    while i < args.len() {
        let v = args[i].value.as_str();
        if v == "-e" || v == "--expression" {
            match args.get(i + 1) {
                Some(s) if s.glob => {
                    return Err(format!(
                        "`sed -e {}`: the script is a glob",
                        short(&s.value)
                    ));
                }
                Some(s) => scripts.push(&s.value),
                None => return Err("`sed -e` without a script".into()),
            }
            i += 2;
            continue;
        }
        if let Some(s) = v.strip_prefix("--expression=") {
            scripts.push(s);
        } else if matches!(
            v,
            "-n" | "--quiet"
                | "--silent"
                | "-E"
                | "-r"
                | "--regexp-extended"
                | "-s"
                | "--separate"
                | "-u"
                | "--unbuffered"
                | "-z"
                | "--null-data"
                | "--posix"
                | "--debug"
                | "--sandbox"
                | "--"
        ) {
        } else if v.len() > 1 && v.starts_with('-') && !v.starts_with("--") {
            let cluster = &v[1..];
            if let Some(pos) = cluster.find('e') {
                if !cluster[..pos].chars().all(|c| "nErsuz".contains(c)) {
                    return Err(format!("`sed {v}` may edit files"));
                }
                let rest = &cluster[pos + 1..];
                if rest.is_empty() {
                    match args.get(i + 1) {
                        Some(s) => scripts.push(&s.value),
                        None => return Err("`sed -e` without a script".into()),
                    }
                    i += 2;
                    continue;
                }
                scripts.push(rest);
            } else if !cluster.chars().all(|c| "nErsuz".contains(c)) {
                return Err(format!("`sed {v}` may edit files or read scripts"));
            }
        } else if v.starts_with("--") {
            return Err(format!("`sed {v}` may edit files"));
        } else if scripts.is_empty() && operands == 0 {
            // A glob could expand to another script than the one checked.
            if args[i].glob {
                return Err(format!("`sed {}`: the script is a glob", short(v)));
            }
            scripts.push(v);
            operands += 1;
        } else {
            operands += 1;
        }
        i += 1;
    }
    for s in scripts {
        sed_script(s).map_err(|why| format!("sed script `{}`: {why}", short(s)))?;
    }
    Ok(())
}

/// Accepts sed scripts of printing, deleting, quitting and `s`/`y` commands without the
/// `w`, `e`, `r`, … commands or flags that touch files or run programs.
fn sed_script(script: &str) -> Result<(), String> {
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < s.len() && (s[*i] == ' ' || s[*i] == '\t') {
            *i += 1;
        }
    };
    // Reads a delimited part starting after the opening delimiter; returns index after the
    // closing one.
    let delimited = |mut i: usize, d: char| -> Result<usize, String> {
        while i < s.len() {
            if s[i] == '\\' {
                i += 2;
                continue;
            }
            if s[i] == d {
                return Ok(i + 1);
            }
            if s[i] == '\n' {
                return Err("unterminated".into());
            }
            i += 1;
        }
        Err("unterminated".into())
    };
    let address = |mut i: usize| -> Result<usize, String> {
        if i < s.len() && s[i].is_ascii_digit() {
            while i < s.len() && (s[i].is_ascii_digit() || s[i] == '~') {
                i += 1;
            }
        } else if i < s.len() && s[i] == '$' {
            i += 1;
        } else if i < s.len() && s[i] == '/' {
            i = delimited(i + 1, '/')?;
            while i < s.len() && (s[i] == 'I' || s[i] == 'M') {
                i += 1;
            }
        }
        Ok(i)
    };
    loop {
        while i < s.len() && matches!(s[i], ' ' | '\t' | '\n' | ';') {
            i += 1;
        }
        if i >= s.len() {
            return Ok(());
        }
        i = address(i)?;
        skip_ws(&mut i);
        if i < s.len() && s[i] == ',' {
            i = address(i + 1)?;
            skip_ws(&mut i);
        }
        if i < s.len() && s[i] == '!' {
            i += 1;
            skip_ws(&mut i);
        }
        let Some(&c) = s.get(i) else {
            return Err("address without a command".into());
        };
        i += 1;
        match c {
            'p' | 'd' | '=' | 'l' | 'n' | 'N' | 'P' | 'D' | 'g' | 'G' | 'h' | 'H' | 'x' | 'z'
            | '{' | '}' => {}
            'q' | 'Q' => {
                skip_ws(&mut i);
                while i < s.len() && s[i].is_ascii_digit() {
                    i += 1;
                }
            }
            's' | 'y' => {
                let Some(&d) = s.get(i) else {
                    return Err("unterminated".into());
                };
                if d == '\\' || d == '\n' {
                    return Err("unusual delimiter".into());
                }
                i = delimited(i + 1, d)?;
                i = delimited(i, d)?;
                if c == 's' {
                    while i < s.len() && "gpiImM0123456789".contains(s[i]) {
                        i += 1;
                    }
                }
            }
            other => return Err(format!("the `{other}` command is not known to be safe")),
        }
        skip_ws(&mut i);
        match s.get(i) {
            None | Some(';') | Some('\n') | Some('}') => {}
            Some(other) => return Err(format!("unexpected `{other}`")),
        }
    }
}
