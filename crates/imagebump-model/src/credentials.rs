//! Credentials sources as users write them (`env:VAR`, `file:PATH`, `ecr[:REGION]`...).
//! No source holds a secret; asking a source is the registry client's job.

use std::path::{Path, PathBuf};

/// A credentials source as written in `registries[].credentials` or `images[].credentials`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// `env:VAR`: `user:password` in an environment variable.
    Env(String),
    /// `file:PATH`: `user:password`, or a Docker config JSON (a mounted `.dockerconfigjson`).
    File(PathBuf),
    /// `dockerconfig`: Docker's `config.json` (`DOCKER_CONFIG` or `~/.docker`), with its
    /// `credHelpers` and `credsStore`.
    DockerConfig,
    /// `ext:PATH`: a program that prints `user:password`.
    Ext(PathBuf),
    /// `ecr` or `ecr:<region>`: an ECR authorization token from the AWS credential chain.
    Ecr(Option<String>),
    /// `gcp` or `gcp:<key file>`: GCR / Artifact Registry.
    Gcp(Option<PathBuf>),
    /// `acr`: Azure Container Registry through an Entra ID token exchange.
    Acr,
    /// `github`: `GITHUB_TOKEN` as the password (GHCR).
    GitHub,
    /// `anonymous`: never send credentials.
    Anonymous,
}

/// The accepted spellings, for error messages.
pub const SOURCES: &str =
    "env:VAR, file:PATH, dockerconfig, ext:PATH, ecr[:REGION], gcp[:KEYFILE], acr, github or anonymous";

/// A credentials source that does not parse, with the spelling as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("credentials {spec:?}: {kind}: needs {what} after the colon")]
    MissingArgument {
        spec: String,
        kind: String,
        what: &'static str,
    },
    #[error("credentials {spec:?}: {kind} takes no argument")]
    UnexpectedArgument { spec: String, kind: String },
    #[error("unknown credentials source {spec:?}; use {SOURCES}")]
    Unknown { spec: String },
}

impl SourceError {
    /// Where the sources and their spellings are described.
    pub fn hint(&self) -> Option<String> {
        Some("see docs/registries.md".into())
    }
}

impl Source {
    pub fn parse(spec: &str) -> Result<Source, SourceError> {
        let spec = spec.trim();
        let (kind, arg) = match spec.split_once(':') {
            Some((k, a)) => (k, Some(a.trim())),
            None => (spec, None),
        };
        let need = |what: &'static str| -> Result<&str, SourceError> {
            arg.filter(|a| !a.is_empty())
                .ok_or_else(|| SourceError::MissingArgument {
                    spec: spec.to_string(),
                    kind: kind.to_string(),
                    what,
                })
        };
        let none = |s: Source| -> Result<Source, SourceError> {
            match arg {
                None => Ok(s),
                Some(_) => Err(SourceError::UnexpectedArgument {
                    spec: spec.to_string(),
                    kind: kind.to_string(),
                }),
            }
        };
        match kind {
            "env" => Ok(Source::Env(need("a variable name")?.to_string())),
            "file" => Ok(Source::File(PathBuf::from(need("a path")?))),
            "ext" => Ok(Source::Ext(PathBuf::from(need("a program path")?))),
            "ecr" => Ok(Source::Ecr(
                arg.filter(|a| !a.is_empty()).map(str::to_string),
            )),
            "gcp" => Ok(Source::Gcp(
                arg.filter(|a| !a.is_empty()).map(PathBuf::from),
            )),
            "dockerconfig" => none(Source::DockerConfig),
            "acr" => none(Source::Acr),
            "github" => none(Source::GitHub),
            "anonymous" => none(Source::Anonymous),
            _ => Err(SourceError::Unknown {
                spec: spec.to_string(),
            }),
        }
    }

    /// Relative paths are relative to `base` (the configuration file's directory).
    pub fn relative_to(self, base: &Path) -> Source {
        let join = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };
        match self {
            Source::File(p) => Source::File(join(p)),
            Source::Ext(p) => Source::Ext(join(p)),
            Source::Gcp(Some(p)) => Source::Gcp(Some(join(p))),
            other => other,
        }
    }

    /// The source as the user wrote it (no secret is part of a source).
    pub fn describe(&self) -> String {
        match self {
            Source::Env(v) => format!("env:{v}"),
            Source::File(p) => format!("file:{}", p.display()),
            Source::DockerConfig => "dockerconfig".into(),
            Source::Ext(p) => format!("ext:{}", p.display()),
            Source::Ecr(None) => "ecr".into(),
            Source::Ecr(Some(r)) => format!("ecr:{r}"),
            Source::Gcp(None) => "gcp".into(),
            Source::Gcp(Some(p)) => format!("gcp:{}", p.display()),
            Source::Acr => "acr".into(),
            Source::GitHub => "github".into(),
            Source::Anonymous => "anonymous".into(),
        }
    }

    /// Can asking again give a different answer (a rotated file, a new token)? Only then is
    /// a 401 worth a second try with fresh credentials.
    pub fn refreshable(&self) -> bool {
        !matches!(
            self,
            Source::Env(_) | Source::GitHub | Source::Anonymous | Source::Gcp(Some(_))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_that_does_not_parse_says_what_is_wrong_with_it() {
        assert_eq!(
            Source::parse("env:").unwrap_err().to_string(),
            "credentials \"env:\": env: needs a variable name after the colon"
        );
        assert_eq!(
            Source::parse("acr:x").unwrap_err().to_string(),
            "credentials \"acr:x\": acr takes no argument"
        );
        let unknown = Source::parse("vault").unwrap_err();
        assert_eq!(
            unknown.to_string(),
            format!("unknown credentials source \"vault\"; use {SOURCES}")
        );
        assert_eq!(unknown.hint().as_deref(), Some("see docs/registries.md"));
    }
}
