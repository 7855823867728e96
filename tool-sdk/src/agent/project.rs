//! A project's own files, as a team already has them: the instruction files `AGENTS.md` and
//! `CLAUDE.md` ([`ProjectMemory`]) and Claude Code's permission rules in
//! `.claude/settings.json` and `.claude/settings.local.json` ([`ClaudeSettings`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::{AgentError, ConfigError};
use crate::error::source;
use crate::permission::{PermissionRules, Rule};

/// The instruction files read in each directory, in this order.
pub const MEMORY_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// The largest instruction file read; a larger one is an error (it would crowd out the
/// conversation).
const MAX_MEMORY_BYTES: u64 = 256 * 1024;

/// The project's instruction files (`AGENTS.md`, `CLAUDE.md`) from the repository root (the
/// nearest directory above holding `.git`; without one, only the directory itself) down to a
/// directory, outermost first: what [`AgentConfig::with_project_memory`] puts in the system
/// prompt.
///
/// [`AgentConfig::with_project_memory`]: super::AgentConfig::with_project_memory
///
/// ```
/// use tool_sdk::agent::ProjectMemory;
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join(".git")).unwrap();
/// std::fs::write(dir.path().join("AGENTS.md"), "Run `cargo test` before committing.").unwrap();
/// let memory = ProjectMemory::load(dir.path()).unwrap();
/// assert_eq!(memory.files.len(), 1);
/// assert!(memory.to_prompt().unwrap().contains("Run `cargo test` before committing."));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectMemory {
    /// The files found, outermost first (in one directory, `AGENTS.md` before `CLAUDE.md`).
    pub files: Vec<MemoryFile>,
}

/// One instruction file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryFile {
    /// Where it is.
    pub path: PathBuf,
    /// What it says.
    pub text: String,
}

impl ProjectMemory {
    /// Reads the files from the repository root down to `dir`. A file that exists but cannot
    /// be read (or is not UTF-8, or is larger than 256 KiB) is an error naming it; a file
    /// reached twice through a symbolic link is read once.
    pub fn load(dir: &Path) -> Result<Self, AgentError> {
        let dir = dir
            .canonicalize()
            .map_err(|error| ConfigError::ProjectMemory {
                path: dir.to_owned(),
                source: error.into(),
            })?;
        let mut dirs: Vec<&Path> = Vec::new();
        let mut root_found = false;
        for ancestor in dir.ancestors() {
            dirs.push(ancestor);
            if ancestor.join(".git").exists() {
                root_found = true;
                break;
            }
        }
        if !root_found {
            dirs.truncate(1);
        }
        dirs.reverse();
        let mut files: Vec<MemoryFile> = Vec::new();
        let mut seen = Vec::new();
        for dir in dirs {
            for name in MEMORY_FILES {
                let path = dir.join(name);
                if !path.is_file() {
                    continue;
                }
                let real = path.canonicalize().unwrap_or_else(|_| path.clone());
                if seen.contains(&real) {
                    continue;
                }
                seen.push(real);
                let problem = |error: std::io::Error| ConfigError::ProjectMemory {
                    path: path.clone(),
                    source: error.into(),
                };
                let size = std::fs::metadata(&path).map_err(problem)?.len();
                if size > MAX_MEMORY_BYTES {
                    return Err(ConfigError::MemoryTooLarge {
                        path,
                        size,
                        limit: MAX_MEMORY_BYTES,
                    }
                    .into());
                }
                let text = std::fs::read_to_string(&path).map_err(problem)?;
                files.push(MemoryFile { path, text });
            }
        }
        Ok(ProjectMemory { files })
    }

    /// The files as a section of the system prompt, each delimited and named by its path;
    /// `None` when there are none.
    pub fn to_prompt(&self) -> Option<String> {
        if self.files.is_empty() {
            return None;
        }
        let mut prompt = String::from(
            "# Project instructions\n\nThe project's instruction files follow, from the \
             repository root down to the working directory. Follow them; where they disagree, \
             the later (closer) file wins.\n",
        );
        for file in &self.files {
            prompt.push_str(&format!(
                "\n<project-file path=\"{}\">\n{}\n</project-file>\n",
                file.path.display(),
                file.text.trim_end()
            ));
        }
        Some(prompt)
    }
}

/// The permission rules of Claude Code's project settings in a directory:
/// `.claude/settings.json` (shared, committed) and `.claude/settings.local.json` (personal),
/// whose `permissions.allow`, `ask` and `deny` lists add up (the local file's after). What
/// [`AgentConfig::with_claude_settings`] adds to the agent's rules.
///
/// The rules are Claude Code's syntax, as [`Rule::parse`] reads it (`mcp__server` stands for
/// every tool of that server, as in Claude Code). A file that is not JSON, or a list that is
/// not a list of strings, is an error naming the file; so is an `ask` or `deny` rule that does
/// not parse (leaving it out would let through what it stops). An `allow` rule that does not
/// parse is left out with a warning (such calls ask), as are settings other than these three
/// lists under `permissions` (`defaultMode`, `additionalDirectories`, ...). Their `hooks`
/// are read too (see [`CommandHooks`](super::CommandHooks)); other keys (`env`, ...) are not.
///
/// [`AgentConfig::with_claude_settings`]: super::AgentConfig::with_claude_settings
///
/// ```
/// use tool_sdk::agent::ClaudeSettings;
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join(".claude")).unwrap();
/// std::fs::write(
///     dir.path().join(".claude/settings.json"),
///     r#"{"permissions": {"allow": ["Bash(cargo test:*)"], "deny": ["Read(./.env)"]}}"#,
/// )
/// .unwrap();
/// let settings = ClaudeSettings::load(dir.path()).unwrap();
/// assert_eq!(settings.permissions.allow[0].to_string(), "Bash(cargo test:*)");
/// assert_eq!(settings.permissions.deny.len(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaudeSettings {
    /// The rules of both files.
    pub permissions: PermissionRules,
    /// The command hooks of both files (`hooks`), the local file's after.
    pub hooks: super::command_hooks::CommandHooks,
    /// The files read.
    pub files: Vec<PathBuf>,
    /// What was left out, and why, each naming its file.
    pub warnings: Vec<String>,
}

impl ClaudeSettings {
    /// The two files' names, in the order read.
    pub const FILES: [&'static str; 2] = [".claude/settings.json", ".claude/settings.local.json"];

    /// Reads `dir/.claude/settings.json`, then `dir/.claude/settings.local.json`; missing files
    /// are skipped.
    pub fn load(dir: &Path) -> Result<Self, AgentError> {
        let mut settings = ClaudeSettings::default();
        for name in Self::FILES {
            let path = dir.join(name);
            if !path.exists() {
                continue;
            }
            settings.read(&path)?;
            settings.files.push(path);
        }
        settings.hooks = settings.hooks.in_dir(dir);
        Ok(settings)
    }

    fn read(&mut self, path: &Path) -> Result<(), AgentError> {
        let error = |what: String| AgentError::from(ConfigError::json_file(path, what, None));
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::json_file(path, format!("cannot read: {e}"), Some(source(e)))
        })?;
        let root: Value = serde_json::from_str(&text).map_err(|e| {
            ConfigError::json_file(path, format!("not valid JSON: {e}"), Some(source(e)))
        })?;
        let Value::Object(root) = root else {
            return Err(error("must be a JSON object".into()));
        };
        if let Some(hooks) = root.get("hooks") {
            let mut warnings = Vec::new();
            self.hooks.read(hooks, &mut warnings).map_err(error)?;
            let file = path.display();
            self.warnings
                .extend(warnings.into_iter().map(|w| format!("{file}: {w}")));
        }
        let permissions = match root.get("permissions") {
            None => return Ok(()),
            Some(Value::Object(permissions)) => permissions,
            Some(_) => return Err(error("`permissions` must be an object".into())),
        };
        for (key, value) in permissions {
            let list = match key.as_str() {
                "allow" => &mut self.permissions.allow,
                "ask" => &mut self.permissions.ask,
                "deny" => &mut self.permissions.deny,
                other => {
                    self.warnings.push(format!(
                        "{}: `permissions.{other}` is not supported; ignored",
                        path.display()
                    ));
                    continue;
                }
            };
            let rules = value
                .as_array()
                .filter(|rules| rules.iter().all(Value::is_string))
                .ok_or_else(|| error(format!("`permissions.{key}` must be a list of strings")))?;
            for text in rules.iter().filter_map(Value::as_str) {
                match Rule::parse(&claude_rule(text)) {
                    Ok(rule) => {
                        if !list.contains(&rule) {
                            list.push(rule);
                        }
                    }
                    Err(problem) if key == "allow" => self.warnings.push(format!(
                        "{}: `permissions.allow`: {problem}; ignored (such calls ask)",
                        path.display()
                    )),
                    Err(problem) => return Err(error(format!("`permissions.{key}`: {problem}"))),
                }
            }
        }
        Ok(())
    }
}

/// Claude Code's `mcp__server` (every tool of a server) as this crate's `mcp__server__*`.
fn claude_rule(text: &str) -> String {
    let text = text.trim();
    match text.strip_prefix("mcp__") {
        Some(server)
            if !server.is_empty()
                && !server.contains("__")
                && !server.contains(['(', '*', '?']) =>
        {
            format!("{text}__*")
        }
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_rule_covers_its_tools() {
        assert_eq!(claude_rule("mcp__github"), "mcp__github__*");
        assert_eq!(
            claude_rule("mcp__github__get_issue"),
            "mcp__github__get_issue"
        );
        assert_eq!(claude_rule("mcp__github__*"), "mcp__github__*");
        assert_eq!(claude_rule("Bash(ls:*)"), "Bash(ls:*)");
    }
}
