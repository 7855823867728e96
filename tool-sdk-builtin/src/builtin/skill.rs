use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use tool_sdk_core::{
    BoxFuture, Tool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolResult,
};

/// One skill: a folder with a `SKILL.md` whose YAML front matter names and describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// Its name, as the model calls it.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The folder it lives in (its scripts and references are relative to it).
    pub dir: PathBuf,
    /// The instructions: `SKILL.md` after the front matter.
    pub body: String,
    /// The tools the skill says it needs, if it says.
    pub allowed_tools: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    allowed_tools: Option<AllowedTools>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    List(Vec<String>),
    Text(String),
}

/// A skill folder that could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("skill {}: {message}", .path.display())]
pub struct SkillError {
    /// The `SKILL.md` (or folder) at fault.
    pub path: PathBuf,
    /// What is wrong with it.
    pub message: String,
}

/// The Skill tool: its description lists the skills found at start-up, and calling it with a
/// skill's name returns that skill's instructions. Written by hand because both the description
/// and the schema (an enum of the names) are only known once the folders have been read.
///
/// ```no_run
/// # extern crate tool_sdk_builtin as tool_sdk;
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use tool_sdk::builtin::SkillTool;
///
/// let skills = SkillTool::load([".claude/skills"]).await?;
/// // A tool like any other: `registry.register(Arc::new(skills))?`.
/// # let _ = skills;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SkillTool {
    skills: Vec<Skill>,
    description: String,
    schema: Value,
}

impl SkillTool {
    /// Reads every `<dir>/<skill>/SKILL.md` under the given folders (missing folders are
    /// skipped). Fails on the first unreadable or invalid skill, naming its file.
    pub async fn load<P: AsRef<Path>>(
        dirs: impl IntoIterator<Item = P>,
    ) -> Result<Self, SkillError> {
        let mut skills: Vec<Skill> = Vec::new();
        for dir in dirs {
            let dir = dir.as_ref();
            let mut entries = match tokio::fs::read_dir(dir).await {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(skill_error(dir, error.to_string())),
            };
            let mut folders = Vec::new();
            while let Some(entry) = entries
                .next_entry()
                .await
                .map_err(|error| skill_error(dir, error.to_string()))?
            {
                let path = entry.path().join("SKILL.md");
                if tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_file()) {
                    folders.push(entry.path());
                }
            }
            folders.sort();
            for folder in folders {
                let skill = load_skill(&folder).await?;
                if let Some(other) = skills.iter().find(|s| s.name == skill.name) {
                    return Err(skill_error(
                        &folder.join("SKILL.md"),
                        format!(
                            "the name `{}` is already used by {}",
                            skill.name,
                            other.dir.display()
                        ),
                    ));
                }
                skills.push(skill);
            }
        }
        Ok(Self::from_skills(skills))
    }

    /// A Skill tool over skills built in code.
    pub fn from_skills(skills: Vec<Skill>) -> Self {
        let mut description = String::from(
            "Loads a skill: specialised instructions (and sometimes scripts) for a kind of task. \
             When the user's request matches a skill below, call this tool with its name first, \
             then follow the instructions it returns. When the user types \"/name\", they mean \
             the skill of that name.\n\nAvailable skills:",
        );
        if skills.is_empty() {
            description.push_str("\n(none)");
        }
        for skill in &skills {
            description.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        let schema = json!({
            "type": "object",
            "properties": {
                "skill": {"type": "string", "enum": names, "description": "The skill's name."},
                "args": {"type": ["string", "null"], "description": "Arguments for the skill, if any."}
            },
            "required": ["skill"],
            "additionalProperties": false
        });
        SkillTool {
            skills,
            description,
            schema,
        }
    }

    /// The skills found.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }
}

fn skill_error(path: &Path, message: impl Into<String>) -> SkillError {
    SkillError {
        path: path.to_owned(),
        message: message.into(),
    }
}

async fn load_skill(folder: &Path) -> Result<Skill, SkillError> {
    let path = folder.join("SKILL.md");
    let text = tokio::fs::read_to_string(&path)
        .await
        .map_err(|error| skill_error(&path, error.to_string()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| {
            skill_error(
                &path,
                "no YAML front matter: start the file with a `---` line, `name:` and \
                 `description:`, and another `---` line",
            )
        })?;
    let end = rest
        .find("\n---")
        .ok_or_else(|| skill_error(&path, "the front matter has no closing `---` line"))?;
    let (yaml, body) = (&rest[..end], &rest[end + 4..]);
    let body = body
        .split_once('\n')
        .map_or("", |(_, after)| after)
        .trim()
        .to_owned();
    let front: FrontMatter = serde_norway::from_str(yaml)
        .map_err(|error| skill_error(&path, format!("invalid front matter: {error}")))?;
    let name = front
        .name
        .or_else(|| folder.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == ':')
    {
        return Err(skill_error(
            &path,
            format!(
                "invalid name {name:?}: use lowercase letters, digits and hyphens (at most 64)"
            ),
        ));
    }
    let description = front
        .description
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| {
            skill_error(
                &path,
                "the front matter needs a `description:` saying when to use the skill",
            )
        })?;
    let allowed_tools = front.allowed_tools.map(|tools| match tools {
        AllowedTools::List(list) => list,
        AllowedTools::Text(text) => text
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    });
    Ok(Skill {
        name,
        description: description.trim().to_owned(),
        dir: folder.to_owned(),
        body,
        allowed_tools,
    })
}

impl Tool for SkillTool {
    fn name(&self) -> &str {
        "Skill"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: Some(true),
            open_world: Some(false),
            ..ToolAnnotations::default()
        }
    }

    fn category(&self) -> Option<&str> {
        Some("builtin")
    }

    fn display_title(&self, input: &Value) -> String {
        format!("Skill {}", input["skill"].as_str().unwrap_or_default())
    }

    fn call<'a>(&'a self, input: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let wanted = input["skill"].as_str().unwrap_or_default();
            let skill = self
                .skills
                .iter()
                .find(|skill| skill.name == wanted)
                .ok_or_else(|| ToolError::not_found(format!("no skill is named `{wanted}`")))?;
            let mut text = format!(
                "Skill `{}` loaded. Its folder is {} (paths in it are relative to that \
                 folder).\n\n{}",
                skill.name,
                skill.dir.display(),
                skill.body
            );
            if let Some(args) = input["args"].as_str().filter(|a| !a.is_empty()) {
                text.push_str(&format!("\n\nArguments: {args}"));
            }
            Ok(ToolOutput::text(text))
        })
    }
}
