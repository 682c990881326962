//! How a command ends: a [`Status`] when it ran (problems included: they are data and were
//! reported as they came), an [`Error`] when it could not run. Both become the documented
//! exit codes in [`exit_code`], the only place that knows them.

use std::path::PathBuf;

use imagebump_model::exit;

/// A command that ran to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Nothing went wrong.
    Done,
    /// At least one problem (file, registry, edit, write, push, forge); all were printed.
    Problems,
    /// `run --exit-code` in dry-run mode: updates are pending and nothing went wrong.
    Pending,
}

/// Why a command could not run (or stopped). The message is printed as `error: …`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("--write applies edits to a local working tree; use it with a local directory")]
    WriteNeedsLocal,
    #[error("--push commits to a remote's base branch; give a repository URL")]
    PushNeedsRemote,
    /// Pull-request mode could not reach the forge.
    #[error(transparent)]
    Forge(#[from] crate::forge::connect::Error),
    #[error("pull requests need a forge token: IMAGEBUMP_FORGE_TOKEN, or GITHUB_TOKEN (contents: write, pull-requests: write) or a GitHub App (IMAGEBUMP_GITHUB_APP_ID and IMAGEBUMP_GITHUB_APP_KEY_FILE), GITLAB_TOKEN (api scope), GITEA_TOKEN (write:repository, write:issue); or pass --dry-run")]
    NoForgeToken,
    /// Pull requests or a push to a remote whose clone is not on a branch: there is no
    /// base branch to propose to.
    #[error("{remote}: {what}; pull requests and pushes need a base branch (pass --ref with a branch name)")]
    NoBaseBranch { remote: String, what: String },
    /// The source cannot be opened (no such directory, clone failed).
    #[error(transparent)]
    Source(#[from] crate::source::Error),
    /// `imagebump.yaml` cannot be read or is invalid.
    #[error(transparent)]
    Config(#[from] crate::config::Error),
    /// The `images` rules of the configuration do not compile.
    #[error("{0}")]
    Rules(String),
    /// A `registries` entry cannot get its client (`caFile`, `credentials`), named by the
    /// configuration file when there is one.
    #[error("{}{source}", file.as_ref().map(|f| format!("{}: ", f.display())).unwrap_or_default())]
    Registries {
        file: Option<PathBuf>,
        source: crate::registry::Error,
    },
    #[error(
        "no registries configured; name one, e.g. `imagebump registry check ghcr.io/acme/web`"
    )]
    NoRegistries,
    /// `tags`: the image on the command line.
    #[error(transparent)]
    Image(#[from] imagebump_model::name::NameError),
    /// `tags`: a policy flag with a bad value.
    #[error("--{flag}: {message}{}", hint_suffix(hint.as_deref()))]
    PolicyFlag {
        flag: String,
        message: String,
        hint: Option<String>,
    },
    /// `tags`: no client for the image's registry.
    #[error(transparent)]
    Client(crate::registry::Error),
    /// `tags`: the image's tags cannot be listed.
    #[error("{image}: {source}{}", hint_suffix(source.hint().as_deref()))]
    TagList {
        image: String,
        source: crate::registry::Error,
    },
    /// `tags --tags-from`: the file cannot be read.
    #[error("{}: {source}", path.display())]
    TagsFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A flag with a value that cannot work (`--pushgateway`).
    #[error("--{flag}: {message}")]
    Flag { flag: &'static str, message: String },
    /// A signal or the deadline stopped the run; its temporary files are gone.
    #[error("stopped by {why}: temporary files removed; {}", done_before(done))]
    Stopped { why: String, done: Vec<String> },
    /// `verify`: the operator's configuration gives the image no `verify` policy.
    #[error("{0}: the configuration names no verify (keys or identities) for this image; add an images rule with verify (docs/tag-selection.md, Signed images)")]
    NoVerifyPolicy(String),
    /// `verify`: the image's digest, signatures or attestations could not be read.
    #[error("{image}: {message}")]
    VerifyRead { image: String, message: String },
    /// `verify-bundle`: an input that cannot be read, or flags that cannot work together.
    #[error("verify-bundle: {0}")]
    BundleInput(String),
    /// `verify-bundle`: the bundle does not verify.
    #[error("refused: {0}")]
    BundleRefused(String),
}

fn done_before(done: &[String]) -> String {
    if done.is_empty() {
        "nothing had been pushed yet".to_string()
    } else {
        format!(
            "done before stopping (it stays, and a rerun continues from it): {}",
            done.join("; ")
        )
    }
}

fn hint_suffix(hint: Option<&str>) -> String {
    hint.map(|h| format!(" (hint: {h})")).unwrap_or_default()
}

/// The exit code of a command's end (docs/architecture.md, "Errors"); an error is printed.
pub fn exit_code(end: Result<Status, Error>) -> i32 {
    let error = match end {
        Ok(Status::Done) => return exit::OK,
        Ok(Status::Problems) => return exit::ERRORS,
        Ok(Status::Pending) => return exit::PENDING,
        Err(e) => e,
    };
    // The error may quote a file name or a registry's answer: one line, nothing hidden.
    eprintln!(
        "error: {}",
        imagebump_model::escape::terminal(&imagebump_http::redact(&error.to_string()))
    );
    code(&error)
}

/// The exit code of an error (not printed).
pub fn code(error: &Error) -> i32 {
    match error {
        Error::WriteNeedsLocal
        | Error::PushNeedsRemote
        | Error::Forge(_)
        | Error::NoForgeToken
        | Error::Config(_)
        | Error::Rules(_)
        | Error::Registries { .. }
        | Error::NoRegistries
        | Error::Image(_)
        | Error::PolicyFlag { .. }
        | Error::Flag { .. }
        | Error::BundleInput(_)
        | Error::NoVerifyPolicy(_)
        // A directory that is not there, or a file given as one, is a mistake on the
        // command line.
        | Error::Source(
            crate::source::Error::NotFound(_) | crate::source::Error::NotADirectory(_),
        ) => exit::USAGE,
        Error::Runtime(_)
        | Error::NoBaseBranch { .. }
        | Error::Source(_)
        | Error::Client(_)
        | Error::TagList { .. }
        | Error::TagsFile { .. }
        | Error::Json(_)
        | Error::Stopped { .. }
        | Error::BundleRefused(_)
        | Error::VerifyRead { .. } => exit::ERRORS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_end_has_its_documented_exit_code() {
        assert_eq!(exit_code(Ok(Status::Done)), 0);
        assert_eq!(exit_code(Ok(Status::Problems)), 1);
        assert_eq!(exit_code(Ok(Status::Pending)), 3);
        assert_eq!(exit_code(Err(Error::WriteNeedsLocal)), 2);
        assert_eq!(exit_code(Err(Error::NoRegistries)), 2);
        // A directory that is not there is a usage error; a clone that fails is not.
        let missing = crate::source::Error::NotFound("nowhere".into());
        assert_eq!(exit_code(Err(Error::Source(missing))), 2);
        let temp = crate::source::Error::Temp(std::io::Error::other("full"));
        assert_eq!(exit_code(Err(Error::Source(temp))), 1);
    }

    #[test]
    fn messages_carry_the_hint() {
        let e = Error::PolicyFlag {
            flag: "min-age".into(),
            message: "bad duration".into(),
            hint: Some("e.g. 3d".into()),
        };
        assert_eq!(e.to_string(), "--min-age: bad duration (hint: e.g. 3d)");
    }
}
