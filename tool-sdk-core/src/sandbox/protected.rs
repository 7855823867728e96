//! The paths no write may touch unless protection is bypassed.

use std::fmt;
use std::path::PathBuf;

/// A path the sandbox refuses to write (unless protection is bypassed).
///
/// Names are compared ignoring case and the code points that case-insensitive file systems
/// ignore (zero-width joiners and the like) and trailing dots and spaces, so `.GIT` and
/// `.g\u{200c}it` count as `.git`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtectedPattern {
    /// Any path with a component of this name: the entry itself and everything under it.
    Component(String),
    /// Any entry whose last component has this name.
    FileName(String),
    /// This path and everything under it (canonicalised when added, if it exists).
    Under(PathBuf),
}

impl fmt::Display for ProtectedPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtectedPattern::Component(name) => write!(f, "anything in or named {name}"),
            ProtectedPattern::FileName(name) => write!(f, "files named {name}"),
            ProtectedPattern::Under(path) => write!(f, "{} and what is under it", path.display()),
        }
    }
}

/// Directories protected wherever they appear in a path.
pub const PROTECTED_DIRS: &[&str] = &[".git", ".ssh", ".gnupg", ".claude", ".tool-sdk"];

/// File names protected wherever they appear: shell startup files and the agent's config.
pub const PROTECTED_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".cshrc",
    ".tcshrc",
    ".kshrc",
    ".login",
    ".logout",
    ".inputrc",
    ".mcp.json",
];

/// A name as case-insensitive file systems compare it: lower case, without the code points
/// they ignore, without trailing dots and spaces.
pub(super) fn fold_name(name: &str) -> String {
    let stripped: String = name
        .chars()
        .filter(|c| {
            !matches!(c,
                '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}')
        })
        .collect();
    stripped.trim_end_matches(['.', ' ']).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_name_matches_disguised_git() {
        assert_eq!(fold_name(".GIT"), ".git");
        assert_eq!(fold_name(".g\u{200c}it"), ".git");
        assert_eq!(fold_name(".git. "), ".git");
        assert_ne!(fold_name(".gitignore"), ".git");
    }
}
