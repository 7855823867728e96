//! [`RegistryError`]: why a registry refused a tool, or could not find one.

/// Why a registry refused a tool, or could not find one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools share a name.
    #[error(
        "two tools are named `{name}`: one defined at {first}, the other at {second}; give one \
         of them another name with #[tool(name = \"...\")]"
    )]
    DuplicateName {
        /// The shared name.
        name: String,
        /// Where the tool already registered was defined.
        first: String,
        /// Where the refused tool was defined.
        second: String,
    },
    /// A name the model could not call.
    #[error(
        "invalid tool name {name:?} (defined at {defined_at}): names must match \
         ^[a-zA-Z0-9_-]{{1,64}}$"
    )]
    InvalidName {
        /// The name.
        name: String,
        /// Where the tool was defined.
        defined_at: String,
    },
    /// An input schema that is not an object schema or does not compile.
    #[error("tool `{name}` (defined at {defined_at}) has an unusable input schema: {message}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// Where it was defined.
        defined_at: String,
        /// What is wrong.
        message: String,
    },
    /// A name no registered tool has.
    #[error("no tool is named `{name}`{}; available: {}", did_you_mean(.suggestions), list(.available))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// Registered names close to it.
        suggestions: Vec<String>,
        /// All registered names.
        available: Vec<String>,
    },
    /// Several of the above at once.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Multiple(Vec<RegistryError>),
}

pub(super) fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!(" (did you mean `{one}`?)"),
        many => format!(
            " (did you mean one of {}?)",
            many.iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
