//! Permission rules in Claude Code's syntax: `Bash(git status:*)`, `Read(src/**)`,
//! `Edit(/abs/path/**)`, `WebFetch(domain:example.com)`, `mcp__github__*`.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::facts::{CallFacts, Subject, normalize};

/// One rule: a tool name (or name glob) and, optionally, what the call must be about.
///
/// What the specifier means comes from what the call acts on (its [`CallFacts`]), never from
/// the tool's name: a path glob for tools that read or write files, a command prefix for
/// shell tools, `domain:` for tools that fetch URLs, the exact input as JSON otherwise. The
/// names `Read`, `Edit`, `Bash` and `WebFetch` also cover every tool that reads files,
/// writes files, runs shell commands or fetches URLs, as in Claude Code. Globs are compiled
/// once, when the rule is parsed.
#[derive(Clone, Debug)]
pub struct Rule {
    tool: String,
    specifier: Option<String>,
    /// Shared: rules are cloned into questions and events, matchers are large.
    compiled: Arc<Compiled>,
}

/// A rule's globs, compiled once.
#[derive(Debug, Default)]
struct Compiled {
    tool_glob: Option<GlobMatcher>,
    path_glob: Option<PathGlob>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        (&self.tool, &self.specifier) == (&other.tool, &other.specifier)
    }
}

impl Eq for Rule {}

impl Hash for Rule {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (&self.tool, &self.specifier).hash(state);
    }
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

/// A specifier read as a path glob, compiled at parse time.
#[derive(Clone, Debug)]
enum PathGlob {
    /// `/abs/**`, `//abs/**` or `~/x/**`: matched against the absolute path.
    Absolute(GlobMatcher),
    /// `src/**`: matched against the path relative to the working directory.
    Relative(GlobMatcher),
    /// Climbs out of the working directory (`../x`): resolved when matched.
    Upward(String),
}

impl PathGlob {
    fn parse(pattern: &str) -> Option<Self> {
        let absolute = if let Some(rest) = pattern.strip_prefix("~/") {
            Some(PathBuf::from(std::env::var_os("HOME")?).join(rest))
        } else if let Some(rest) = pattern.strip_prefix("//") {
            Some(PathBuf::from("/").join(rest))
        } else if pattern.starts_with('/') {
            Some(PathBuf::from(pattern))
        } else {
            None
        };
        match absolute {
            Some(path) => compile(&normalize(&path).to_string_lossy()).map(PathGlob::Absolute),
            None => {
                let relative = normalize(Path::new(pattern));
                let relative = relative.to_string_lossy();
                if pattern.starts_with("..") || relative.starts_with("..") {
                    Some(PathGlob::Upward(pattern.to_owned()))
                } else {
                    compile(&relative).map(PathGlob::Relative)
                }
            }
        }
    }

    fn matches(&self, path: &Path, working_dir: &Path) -> bool {
        match self {
            PathGlob::Absolute(glob) => glob.is_match(path),
            PathGlob::Relative(glob) => path
                .strip_prefix(normalize(working_dir))
                .is_ok_and(|relative| glob.is_match(relative)),
            PathGlob::Upward(pattern) => {
                compile(&normalize(&working_dir.join(pattern)).to_string_lossy())
                    .is_some_and(|glob| glob.is_match(path))
            }
        }
    }
}

fn compile(pattern: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .ok()
        .map(|glob| glob.compile_matcher())
}

/// Which way a rule is read: allow and ask rules must cover every simple command of a shell
/// command; a deny rule refuses the whole command if it covers any one of them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    Allow,
    Deny,
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
        let tool_glob = if tool.contains(['*', '?']) {
            Some(
                globset::Glob::new(tool)
                    .map_err(|e| error(&format!("the name glob does not compile: {e}")))?
                    .compile_matcher(),
            )
        } else {
            None
        };
        let path_glob = specifier.as_deref().and_then(PathGlob::parse);
        Ok(Rule {
            tool: tool.to_owned(),
            specifier,
            compiled: Arc::new(Compiled {
                tool_glob,
                path_glob,
            }),
        })
    }

    /// A rule allowing exactly this call again (what "allow always" remembers): the command
    /// of a shell call, the path of a file call (as `Read(..)` or `Edit(..)`), the host of a
    /// fetch, or the whole tool.
    pub fn for_call(facts: &CallFacts) -> Self {
        let (tool, specifier) = match &facts.subject {
            Subject::Shell(shell) => (facts.tool, Some(shell.command.clone())),
            Subject::Path { path, writes } => (
                if *writes { "Edit" } else { "Read" },
                Some(globset::escape(&path.to_string_lossy())),
            ),
            Subject::Url { host } => (
                facts.tool,
                host.as_ref().map(|host| format!("domain:{host}")),
            ),
            Subject::Undeclared | Subject::AgentState => (facts.tool, None),
        };
        let text = match specifier {
            Some(specifier) => format!("{tool}({specifier})"),
            None => tool.to_owned(),
        };
        // Built from a valid tool name and a non-empty specifier, so it parses; the fallback
        // (a rule for the whole tool) only guards a shell command with an unbalanced `)`.
        Rule::parse(&text).unwrap_or_else(|_| Rule {
            tool: facts.tool.to_owned(),
            specifier: None,
            compiled: Arc::default(),
        })
    }

    /// Whether the rule covers this call (as an allow or ask rule: a shell command is covered
    /// when every one of its simple commands is).
    pub fn matches(&self, facts: &CallFacts, input: &Value, working_dir: &Path) -> bool {
        self.matches_as(Reading::Allow, facts, input, working_dir)
    }

    fn matches_as(
        &self,
        reading: Reading,
        facts: &CallFacts,
        input: &Value,
        working_dir: &Path,
    ) -> bool {
        if !self.covers_tool(facts) {
            return false;
        }
        let Some(specifier) = &self.specifier else {
            return true;
        };
        match &facts.subject {
            Subject::Shell(shell) => match reading {
                // Every simple command of a compound command must match: `git status && rm
                // -rf ~` is not covered by `Bash(git status:*)`.
                Reading::Allow => shell.commands_for_allow().is_some_and(|commands| {
                    !commands.is_empty() && commands.iter().all(|one| bash_matches(specifier, one))
                }),
                Reading::Deny => shell
                    .commands_for_deny()
                    .iter()
                    .any(|one| bash_matches(specifier, one)),
            },
            Subject::Url { host } => {
                let (Some(domain), Some(host)) = (specifier.strip_prefix("domain:"), host) else {
                    return false;
                };
                host == domain || host.ends_with(&format!(".{domain}"))
            }
            Subject::Path { path, .. } => self
                .compiled
                .path_glob
                .as_ref()
                .is_some_and(|glob| glob.matches(path, working_dir)),
            // Other tools: the specifier is the exact input, as JSON.
            Subject::Undeclared | Subject::AgentState => {
                serde_json::from_str::<Value>(specifier).is_ok_and(|expected| expected == *input)
            }
        }
    }

    /// Whether this rule could apply to the tool at all: by its name or name glob, or by the
    /// family name of what it acts on.
    fn covers_tool(&self, facts: &CallFacts) -> bool {
        if let Some(glob) = &self.compiled.tool_glob {
            return glob.is_match(facts.tool);
        }
        if self.tool == facts.tool {
            return true;
        }
        match (self.tool.as_str(), &facts.subject) {
            ("Read", Subject::Path { .. }) => true,
            ("Edit", Subject::Path { writes, .. }) => *writes,
            ("Bash", Subject::Shell(_)) => true,
            ("WebFetch", Subject::Url { .. }) => true,
            _ => false,
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
    pub fn verdict(&self, facts: &CallFacts, input: &Value, working_dir: &Path) -> RuleVerdict {
        let find = |rules: &[Rule]| {
            rules
                .iter()
                .find(|rule| rule.matches(facts, input, working_dir))
                .cloned()
        };
        if let Some(rule) = self.deny_for(facts, input, working_dir) {
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

    /// The deny rule that matches, if any. For a shell command, a deny rule matching ANY of
    /// its simple commands denies the whole command.
    pub fn deny_for(&self, facts: &CallFacts, input: &Value, working_dir: &Path) -> Option<Rule> {
        self.deny
            .iter()
            .find(|rule| rule.matches_as(Reading::Deny, facts, input, working_dir))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use tool_sdk_core::ActsOn;

    /// The facts of a call to a built-in tool, with what it declares.
    fn facts<'a>(tool: &'a str, input: &Value) -> CallFacts<'a> {
        let acts_on = match tool {
            "Bash" => ActsOn::ShellCommand("command"),
            "Read" => ActsOn::ReadsPath("file_path"),
            "Glob" | "Grep" => ActsOn::ReadsPath("path"),
            "Write" | "Edit" => ActsOn::WritesPath("file_path"),
            "WebFetch" => ActsOn::FetchesUrl("url"),
            _ => ActsOn::Unspecified,
        };
        CallFacts::of(tool, false, acts_on, input, Path::new("/ws"))
    }

    fn check(rule: &str, tool: &str, input: Value) -> bool {
        Rule::parse(rule)
            .unwrap()
            .matches(&facts(tool, &input), &input, Path::new("/ws"))
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
            let input = json!({"command": command});
            rules.verdict(&facts("Bash", &input), &input, Path::new("/ws"))
        };
        assert!(matches!(verdict("ls && rm -rf x"), RuleVerdict::Deny(_)));
        assert!(matches!(verdict("git push origin"), RuleVerdict::Ask(_)));
        assert!(matches!(verdict("ls"), RuleVerdict::Allow(_)));
    }

    #[test]
    fn allow_always_rules_are_specific() {
        assert_eq!(
            Rule::for_call(&facts("Bash", &json!({"command": "npm test"}))).to_string(),
            "Bash(npm test)"
        );
        assert_eq!(
            Rule::for_call(&facts("Write", &json!({"file_path": "/ws/a.rs"}))).to_string(),
            "Edit(/ws/a.rs)"
        );
        assert_eq!(
            Rule::for_call(&facts("WebFetch", &json!({"url": "https://Docs.rs/x"}))).to_string(),
            "WebFetch(domain:docs.rs)"
        );
    }
}
