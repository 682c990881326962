//! Which forge hosts the manifest repository.

use std::fmt;
use std::str::FromStr;

/// The forges imagebump opens pull requests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForgeKind {
    Github,
    Gitlab,
    /// Gitea and Forgejo (the same API).
    Gitea,
}

impl ForgeKind {
    /// The names accepted on the command line, with the aliases of each.
    pub const NAMES: [(&'static str, &'static [&'static str]); 3] =
        [("github", &[]), ("gitlab", &[]), ("gitea", &["forgejo"])];
}

impl FromStr for ForgeKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "github" => Ok(ForgeKind::Github),
            "gitlab" => Ok(ForgeKind::Gitlab),
            "gitea" | "forgejo" => Ok(ForgeKind::Gitea),
            other => Err(format!(
                "unknown forge {other:?}; use github, gitlab, gitea or forgejo"
            )),
        }
    }
}

impl fmt::Display for ForgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ForgeKind::Github => "github",
            ForgeKind::Gitlab => "gitlab",
            ForgeKind::Gitea => "gitea",
        })
    }
}
