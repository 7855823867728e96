//! Permission rules in Claude Code's syntax: `Bash(git status:*)`, `Read(src/**)`,
//! `Edit(/abs/path/**)`, `WebFetch(domain:example.com)`, `mcp__github__*`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Tools whose rules are written `Read(...)`: they only read files.
const READ_TOOLS: &[&str] = &["Read", "Glob", "Grep", "NotebookRead", "LS"];
/// Tools whose rules are written `Edit(...)`: they change files.
const EDIT_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// One rule: a tool name (or name glob) and, for some tools, what the call must be about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    tool: String,
    specifier: Option<String>,
}

/// A rule that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule {rule:?}: {problem}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub problem: String,
}

impl Rule {
    /// Parses `Tool`, `Tool(specifier)` or a name glob such as `mcp__github__*`.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let text = text.trim();
        let error = |problem: &str| RuleError {
            rule: text.to_owned(),
            problem: problem.to_owned(),
        };
        let (tool, specifier) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let inner = text[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| error("it has `(` but does not end with `)`"))?;
                (&text[..open], Some(inner.trim().to_owned()))
            }
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '?'))
        {
            return Err(error(
                "the tool name must be a tool name or a glob like mcp__server__*",
            ));
        }
        if specifier.as_deref() == Some("") {
            return Err(error(
                "the parentheses are empty: write `Tool` alone for every call",
            ));
        }
        Ok(Rule {
            tool: tool.to_owned(),
            specifier,
        })
    }

    /// A rule allowing exactly this call again (what "allow always" remembers).
    pub fn for_call(tool: &str, input: &Value) -> Self {
        let specifier = if tool == "Bash" {
            input["command"].as_str().map(str::to_owned)
        } else if READ_TOOLS.contains(&tool) || EDIT_TOOLS.contains(&tool) {
            file_path(input).map(str::to_owned)
        } else if tool == "WebFetch" {
            input["url"]
                .as_str()
                .and_then(host_of)
                .map(|host| format!("domain:{host}"))
        } else {
            None
        };
        let tool = if READ_TOOLS.contains(&tool) {
            "Read"
        } else if EDIT_TOOLS.contains(&tool) {
            "Edit"
        } else {
            tool
        };
        Rule {
            tool: tool.to_owned(),
            specifier,
        }
    }

    /// Whether the rule covers this call. `bash_commands` splits a shell command into its
    /// simple commands (`None` when it cannot be parsed: then no Bash rule with a specifier
    /// matches, so the call falls through to asking).
    pub fn matches(
        &self,
        tool: &str,
        input: &Value,
        working_dir: &Path,
        bash_commands: &dyn Fn(&str) -> Option<Vec<String>>,
    ) -> bool {
        if !self.covers_tool(tool) {
            return false;
        }
        let Some(specifier) = &self.specifier else {
            return true;
        };
        if tool == "Bash" {
            let Some(command) = input["command"].as_str() else {
                return false;
            };
            let Some(commands) = bash_commands(command) else {
                return false;
            };
            // Every simple command of a compound command must match: `git status && rm -rf ~`
            // is not covered by `Bash(git status:*)`.
            return !commands.is_empty() && commands.iter().all(|one| bash_matches(specifier, one));
        }
        if tool == "WebFetch" {
            let (Some(domain), Some(host)) = (
                specifier.strip_prefix("domain:"),
                input["url"].as_str().and_then(host_of),
            ) else {
                return false;
            };
            return host == domain || host.ends_with(&format!(".{domain}"));
        }
        if READ_TOOLS.contains(&tool) || EDIT_TOOLS.contains(&tool) {
            let Some(path) = file_path(input) else {
                // Glob/Grep without a path search the working directory.
                return path_matches(specifier, working_dir, working_dir);
            };
            return path_matches(specifier, &working_dir.join(path), working_dir);
        }
        // Other tools: the specifier is the exact input, as JSON.
        serde_json::from_str::<Value>(specifier).is_ok_and(|expected| expected == *input)
    }

    /// Whether this rule could apply to the tool at all.
    fn covers_tool(&self, tool: &str) -> bool {
        match self.tool.as_str() {
            "Read" => READ_TOOLS.contains(&tool) || EDIT_TOOLS.contains(&tool),
            "Edit" => EDIT_TOOLS.contains(&tool),
            pattern if pattern.contains(['*', '?']) => glob_name(pattern, tool),
            name => name == tool,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.specifier {
            Some(specifier) => write!(f, "{}({specifier})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

impl std::str::FromStr for Rule {
    type Err = RuleError;
    fn from_str(text: &str) -> Result<Self, RuleError> {
        Rule::parse(text)
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Rule::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Allow, ask and deny lists. Deny beats ask beats allow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionRules {
    /// Calls that run without asking.
    pub allow: Vec<Rule>,
    /// Calls that always ask, even if an allow rule matches.
    pub ask: Vec<Rule>,
    /// Calls that never run.
    pub deny: Vec<Rule>,
}

/// What the rules say about one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleVerdict {
    /// A deny rule matched.
    Deny(Rule),
    /// An ask rule matched.
    Ask(Rule),
    /// An allow rule matched.
    Allow(Rule),
    /// No rule matched.
    None,
}

impl PermissionRules {
    /// Parses lists of rule strings.
    pub fn new<S: AsRef<str>>(
        allow: impl IntoIterator<Item = S>,
        ask: impl IntoIterator<Item = S>,
        deny: impl IntoIterator<Item = S>,
    ) -> Result<Self, RuleError> {
        let parse = |rules: &mut dyn Iterator<Item = S>| {
            rules
                .map(|rule| Rule::parse(rule.as_ref()))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(PermissionRules {
            allow: parse(&mut allow.into_iter())?,
            ask: parse(&mut ask.into_iter())?,
            deny: parse(&mut deny.into_iter())?,
        })
    }

    /// Deny, then ask, then allow.
    pub fn verdict(
        &self,
        tool: &str,
        input: &Value,
        working_dir: &Path,
        bash_commands: &dyn Fn(&str) -> Option<Vec<String>>,
    ) -> RuleVerdict {
        let find = |rules: &[Rule]| {
            rules
                .iter()
                .find(|rule| rule.matches(tool, input, working_dir, bash_commands))
                .cloned()
        };
        if let Some(rule) = self.deny_for(tool, input, working_dir, bash_commands) {
            return RuleVerdict::Deny(rule);
        }
        if let Some(rule) = find(&self.ask) {
            return RuleVerdict::Ask(rule);
        }
        if let Some(rule) = find(&self.allow) {
            return RuleVerdict::Allow(rule);
        }
        RuleVerdict::None
    }

    /// The deny rule that matches, if any. For Bash, a deny rule matching ANY simple command
    /// of a compound command denies the whole command.
    pub fn deny_for(
        &self,
        tool: &str,
        input: &Value,
        working_dir: &Path,
        bash_commands: &dyn Fn(&str) -> Option<Vec<String>>,
    ) -> Option<Rule> {
        self.deny
            .iter()
            .find(|rule| {
                if tool == "Bash"
                    && rule.covers_tool(tool)
                    && let (Some(specifier), Some(command)) =
                        (&rule.specifier, input["command"].as_str())
                {
                    return bash_commands(command).is_some_and(|commands| {
                        commands.iter().any(|one| bash_matches(specifier, one))
                    });
                }
                rule.matches(tool, input, working_dir, bash_commands)
            })
            .cloned()
    }
}

/// `git status:*` matches `git status` and `git status -s`; anything else must be equal.
fn bash_matches(specifier: &str, command: &str) -> bool {
    let command = command.trim();
    match specifier.strip_suffix(":*") {
        Some(prefix) => {
            let prefix = prefix.trim();
            command == prefix
                || command
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with(' '))
        }
        None => command == specifier.trim(),
    }
}

fn file_path(input: &Value) -> Option<&str> {
    ["file_path", "notebook_path", "path"]
        .iter()
        .find_map(|key| input[*key].as_str())
}

fn host_of(url: &str) -> Option<String> {
    let after_scheme = url.split_once("://")?.1;
    let authority = after_scheme.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.split(':').next()?.trim_end_matches('.');
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Matches a path glob: absolute (`/abs/**`, or `//abs/**` as Claude Code writes it), in the
/// home directory (`~/x/**`), or relative to the working directory (`src/**`). Paths are
/// normalised lexically (`.` and `..` folded) on both sides before matching; the sandbox
/// resolves symlinks separately.
fn path_matches(pattern: &str, path: &Path, working_dir: &Path) -> bool {
    let pattern_path = if let Some(rest) = pattern.strip_prefix("~/") {
        match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => return false,
        }
    } else if let Some(rest) = pattern.strip_prefix("//") {
        PathBuf::from("/").join(rest)
    } else {
        working_dir.join(pattern)
    };
    let pattern = normalize(&pattern_path).to_string_lossy().into_owned();
    let path = normalize(path).to_string_lossy().into_owned();
    match globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
    {
        Ok(glob) => glob.compile_matcher().is_match(&path),
        Err(_) => false,
    }
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn glob_name(pattern: &str, name: &str) -> bool {
    globset::Glob::new(pattern).is_ok_and(|glob| glob.compile_matcher().is_match(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(command: &str) -> Option<Vec<String>> {
        // Test stand-in for the shell parser: split on `&&` and `;`.
        Some(
            command
                .split(['&', ';'])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }

    fn check(rule: &str, tool: &str, input: Value) -> bool {
        Rule::parse(rule)
            .unwrap()
            .matches(tool, &input, Path::new("/ws"), &words)
    }

    #[test]
    fn rules_parse_and_print_back() {
        for text in [
            "Bash(git status:*)",
            "Read(src/**)",
            "mcp__github__*",
            "WebFetch(domain:example.com)",
        ] {
            assert_eq!(Rule::parse(text).unwrap().to_string(), text);
        }
        assert!(Rule::parse("Bash(").is_err());
        assert!(Rule::parse("Bash()").is_err());
        assert!(Rule::parse("Ba sh").is_err());
    }

    #[test]
    fn bash_rules_match_every_simple_command() {
        assert!(check(
            "Bash(git status:*)",
            "Bash",
            json!({"command": "git status -s"})
        ));
        assert!(check(
            "Bash(git status:*)",
            "Bash",
            json!({"command": "git status"})
        ));
        assert!(!check(
            "Bash(git status:*)",
            "Bash",
            json!({"command": "git statusx"})
        ));
        assert!(!check(
            "Bash(git status:*)",
            "Bash",
            json!({"command": "git status && rm -rf ~"})
        ));
        assert!(check(
            "Bash(npm run test)",
            "Bash",
            json!({"command": "npm run test"})
        ));
        assert!(!check(
            "Bash(npm run test)",
            "Bash",
            json!({"command": "npm run test2"})
        ));
        assert!(check("Bash", "Bash", json!({"command": "anything"})));
    }

    #[test]
    fn path_rules_resolve_against_the_working_directory() {
        assert!(check(
            "Read(src/**)",
            "Read",
            json!({"file_path": "/ws/src/a/b.rs"})
        ));
        assert!(check(
            "Read(src/**)",
            "Read",
            json!({"file_path": "src/a.rs"})
        ));
        assert!(!check(
            "Read(src/**)",
            "Read",
            json!({"file_path": "/ws/src/../secret"})
        ));
        assert!(!check(
            "Read(src/**)",
            "Read",
            json!({"file_path": "/other/src/a.rs"})
        ));
        assert!(check(
            "Read(src/**)",
            "Grep",
            json!({"path": "/ws/src/deep"})
        ));
        assert!(check(
            "Edit(//etc/**)",
            "Write",
            json!({"file_path": "/etc/hosts"})
        ));
        assert!(check(
            "Edit(/abs/**)",
            "Edit",
            json!({"file_path": "/abs/x"})
        ));
        assert!(!check(
            "Edit(/abs/**)",
            "Edit",
            json!({"file_path": "/ws/abs/x"})
        ));
        assert!(check(
            "Edit(./src/*.rs)",
            "Edit",
            json!({"file_path": "/ws/src/a.rs"})
        ));
        assert!(!check(
            "Edit(./src/*.rs)",
            "Edit",
            json!({"file_path": "/ws/src/a/b.rs"})
        ));
        assert!(!check(
            "Edit(src/**)",
            "Read",
            json!({"file_path": "/ws/src/a.rs"})
        ));
        assert!(
            check("Read(src/**)", "Edit", json!({"file_path": "/ws/src/a.rs"})),
            "Read rules cover editing tools"
        );
    }

    #[test]
    fn webfetch_and_mcp_rules() {
        assert!(check(
            "WebFetch(domain:example.com)",
            "WebFetch",
            json!({"url": "https://docs.example.com/x"})
        ));
        assert!(!check(
            "WebFetch(domain:example.com)",
            "WebFetch",
            json!({"url": "https://example.com.evil.io/"})
        ));
        assert!(!check(
            "WebFetch(domain:example.com)",
            "WebFetch",
            json!({"url": "https://evil.io/?example.com"})
        ));
        assert!(check(
            "mcp__github__*",
            "mcp__github__create_issue",
            json!({})
        ));
        assert!(!check(
            "mcp__github__*",
            "mcp__gitlab__create_issue",
            json!({})
        ));
    }

    #[test]
    fn deny_beats_ask_beats_allow_and_bash_deny_matches_any_part() {
        let rules = PermissionRules::new(["Bash"], ["Bash(git push:*)"], ["Bash(rm:*)"]).unwrap();
        let verdict = |command: &str| {
            rules.verdict(
                "Bash",
                &json!({"command": command}),
                Path::new("/ws"),
                &words,
            )
        };
        assert!(matches!(verdict("ls && rm -rf x"), RuleVerdict::Deny(_)));
        assert!(matches!(verdict("git push origin"), RuleVerdict::Ask(_)));
        assert!(matches!(verdict("ls"), RuleVerdict::Allow(_)));
    }

    #[test]
    fn allow_always_rules_are_specific() {
        assert_eq!(
            Rule::for_call("Bash", &json!({"command": "npm test"})).to_string(),
            "Bash(npm test)"
        );
        assert_eq!(
            Rule::for_call("Write", &json!({"file_path": "/ws/a.rs"})).to_string(),
            "Edit(/ws/a.rs)"
        );
        assert_eq!(
            Rule::for_call("WebFetch", &json!({"url": "https://Docs.rs/x"})).to_string(),
            "WebFetch(domain:docs.rs)"
        );
    }
}
