//! Which environment variable names look like they hold secrets: the one rule `get_env` and
//! the Bash classifier both follow, so a variable one of them hides the other cannot reveal.

/// Marks a name holds anywhere: `OPENAI_API_KEY`, `GITHUB_TOKEN`, `MYSQLPASSWORD`.
const ANYWHERE: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "PRIVATE",
    "CONNECTION",
    "PWD",
];

/// Marks that must be a whole `_`-separated part of the name: `MYSQL_PWD`, `DATABASE_URL`
/// (URLs and DSNs carry `user:password@`), `HTTPS_PROXY` (likewise), `GH_PAT`. Whole parts
/// only, so `PATH` and `GIT_AUTHOR_NAME` stay readable.
const PARTS: &[&str] = &[
    "PASS", "PW", "PAT", "AUTH", "DSN", "URL", "URI", "COOKIE", "COOKIES", "SESSION", "PROXY",
];

/// Why `name` looks like the name of an environment variable holding a secret (the mark it
/// carries), or `None` when it does not. Case is ignored; `PWD` and `OLDPWD`, the shell's
/// directories, are not secrets.
///
/// ```
/// # extern crate tool_sdk_builtin as tool_sdk;
/// use tool_sdk::permission::secret_marker;
///
/// assert_eq!(secret_marker("ANTHROPIC_API_KEY"), Some("KEY"));
/// assert_eq!(secret_marker("DATABASE_URL"), Some("URL"));
/// assert_eq!(secret_marker("MYSQL_PWD"), Some("PWD"));
/// assert_eq!(secret_marker("PWD"), None);
/// assert_eq!(secret_marker("PATH"), None);
/// ```
pub fn secret_marker(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    if matches!(upper.as_str(), "PWD" | "OLDPWD") {
        return None;
    }
    if let Some(mark) = ANYWHERE.iter().find(|m| upper.contains(*m)) {
        return Some(mark);
    }
    upper
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find_map(|part| PARTS.iter().find(|m| **m == part).copied())
}

#[cfg(test)]
mod tests {
    use super::secret_marker;

    #[test]
    fn secrets_and_plain_names() {
        for name in [
            "ANTHROPIC_API_KEY",
            "github_token",
            "DATABASE_URL",
            "MYSQL_PWD",
            "PGPASSWORD",
            "HTTPS_PROXY",
            "GH_PAT",
            "REDIS_URI",
            "SENTRY_DSN",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(secret_marker(name).is_some(), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "USER",
            "GIT_AUTHOR_NAME",
            "LANG",
        ] {
            assert_eq!(secret_marker(name), None, "{name}");
        }
    }
}
