//! Connection strings in messages, without their passwords.

/// `spec` with any password replaced by `***`: the one in a URL's user info
/// (`postgres://user:secret@host`) and any `password=...` parameter, in a URL's query or a
/// `key=value` connection string (quoted values included).
pub(crate) fn redact_password(spec: &str) -> String {
    let mut out = match spec.split_once("://") {
        Some((scheme, rest)) => {
            // The user info ends at the last `@` before the query: a password with an
            // unescaped `@` or `/` is still hidden whole.
            let query_at = rest.find('?').unwrap_or(rest.len());
            match rest[..query_at].rfind('@') {
                Some(at) => {
                    let userinfo = &rest[..at];
                    let user = match userinfo.split_once(':') {
                        Some((user, _)) => format!("{user}:***"),
                        None => userinfo.to_owned(),
                    };
                    format!("{scheme}://{user}{}", &rest[at..])
                }
                None => spec.to_owned(),
            }
        }
        None => spec.to_owned(),
    };
    let mut from = 0;
    while let Some(found) = out[from..].to_ascii_lowercase().find("password=") {
        let start = from + found + "password=".len();
        let value = &out[start..];
        let len = match value.chars().next() {
            // A quoted key=value: up to the closing quote that is not escaped.
            Some('\'') => {
                let mut escaped = false;
                let mut end = value.len();
                for (i, c) in value.char_indices().skip(1) {
                    match c {
                        '\\' if !escaped => escaped = true,
                        '\'' if !escaped => {
                            end = i + 1;
                            break;
                        }
                        _ => escaped = false,
                    }
                }
                end
            }
            _ => value
                .find(|c: char| c == '&' || c.is_whitespace())
                .unwrap_or(value.len()),
        };
        out.replace_range(start..start + len, "***");
        from = start + 3;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact_password;

    #[test]
    fn passwords_are_hidden_wherever_they_are() {
        let cases = [
            (
                "postgres://u:secret@host:5432/db",
                "postgres://u:***@host:5432/db",
            ),
            ("postgresql://u@host/db", "postgresql://u@host/db"),
            (
                "postgres://u:p@ss/w@host/db?x=1",
                "postgres://u:***@host/db?x=1",
            ),
            (
                "postgres://host/db?user=u&password=secret&sslmode=disable",
                "postgres://host/db?user=u&password=***&sslmode=disable",
            ),
            (
                "host=/tmp user=u password=secret dbname=d",
                "host=/tmp user=u password=*** dbname=d",
            ),
            (
                "host=h PASSWORD='a \\' b' dbname=d",
                "host=h PASSWORD=*** dbname=d",
            ),
            ("sqlite:/some/path", "sqlite:/some/path"),
        ];
        for (spec, shown) in cases {
            assert_eq!(redact_password(spec), shown, "{spec}");
        }
    }
}
