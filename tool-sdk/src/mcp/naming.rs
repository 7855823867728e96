//! Tool names: `mcp__<server>__<tool>`, made safe for every model API.

use std::collections::BTreeMap;

/// The longest name the model APIs accept.
const MAX_LEN: usize = 64;

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a: a small, stable hash (the same name on every run and every platform).
fn short_hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", hash as u32 ^ (hash >> 32) as u32)
}

/// The name the model sees for `tool` of `server`: `mcp__<server>__<tool>`, each part
/// sanitised, cut to 64 characters with a short hash of the original names when too long.
///
/// ```
/// use tool_sdk::mcp::tool_name;
///
/// assert_eq!(tool_name("github", "create_issue"), "mcp__github__create_issue");
/// assert_eq!(tool_name("my server", "get.time"), "mcp__my_server__get_time");
/// let long = tool_name("server", &"x".repeat(100));
/// assert_eq!(long.len(), 64);
/// ```
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_LEN {
        return full;
    }
    let hash = short_hash(&format!("{server}\u{0}{tool}"));
    // All ASCII after sanitising, so byte slicing is safe.
    format!("{}_{hash}", &full[..MAX_LEN - hash.len() - 1])
}

/// The names one server's tools get, and the way back to the server's own names.
#[derive(Clone, Debug, Default)]
pub struct NameMap {
    /// Exposed name to the server's name.
    to_server: BTreeMap<String, String>,
}

impl NameMap {
    /// Names `tools` of `server`. Two tools that sanitise to one name both keep a distinct
    /// name (the second gets a hash suffix); a collision that cannot be resolved is an error.
    pub fn build<'a>(
        server: &str,
        tools: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, String> {
        let mut map = NameMap::default();
        for tool in tools {
            let mut name = tool_name(server, tool);
            if let Some(other) = map.to_server.get(&name) {
                if other == tool {
                    return Err(format!(
                        "MCP server `{server}` lists the tool `{tool}` twice"
                    ));
                }
                let hash = short_hash(&format!("{server}\u{0}{tool}"));
                let keep = name.len().min(MAX_LEN - hash.len() - 1);
                name = format!("{}_{hash}", &name[..keep]);
                if let Some(other) = map.to_server.get(&name) {
                    return Err(format!(
                        "MCP server `{server}`: the tools `{other}` and `{tool}` map to the same \
                         name `{name}`"
                    ));
                }
                tracing::warn!(server, tool, name, "MCP tool renamed to avoid a collision");
            }
            map.to_server.insert(name, tool.to_owned());
        }
        Ok(map)
    }

    /// The server's own name for an exposed name.
    pub fn server_name(&self, exposed: &str) -> Option<&str> {
        self.to_server.get(exposed).map(String::as_str)
    }

    /// Pairs of (exposed name, server name).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.to_server.iter().map(|(a, b)| (a.as_str(), b.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::is_valid_name;

    #[test]
    fn names_are_valid_unique_and_reversible() {
        let tools = [
            "get.time",
            "get_time",
            "résumé",
            &"a".repeat(80),
            &format!("{}b", "a".repeat(80)),
        ];
        let map = NameMap::build("my server!", tools.iter().map(|s| &**s)).unwrap();
        let pairs: Vec<_> = map.iter().collect();
        assert_eq!(pairs.len(), tools.len());
        for (exposed, original) in pairs {
            assert!(is_valid_name(exposed), "{exposed}");
            assert!(exposed.starts_with("mcp__my_server___"), "{exposed}");
            assert_eq!(map.server_name(exposed), Some(original));
        }
        assert!(NameMap::build("s", ["a", "a"]).is_err());
        assert_eq!(tool_name("s", "t"), "mcp__s__t");
    }
}
