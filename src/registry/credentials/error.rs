//! Why a credentials source gave no credential.

use std::path::PathBuf;

/// Why a credentials source gave no credential. The text names the source as written and
/// the variable, file, program or endpoint involved, never a secret; whatever a program, a
/// file or a service said passes the redactor ([`Error::redacted`]) before a user reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A variable the source reads is not set (or is set without the one that goes with it).
    #[error("{message}")]
    Unset { var: String, message: String },
    /// A value the operator gave (a variable's, a region, an endpoint URL) cannot be used.
    #[error("{message}")]
    Setting { message: String },
    /// A file the source reads is missing, unreadable or not what it must be (`expected`).
    #[error("{message}")]
    File {
        path: PathBuf,
        expected: &'static str,
        message: String,
    },
    /// The `ext:` program could not be run, failed, or printed no credential.
    #[error("{message}")]
    Program { path: PathBuf, message: String },
    /// A service (a token endpoint, a metadata server, STS, ECR, Entra ID) could not be
    /// reached, refused, or answered something unusable.
    #[error("{message}")]
    Service { message: String },
}

impl Error {
    pub(crate) fn unset(var: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Unset {
            var: var.into(),
            message: message.into(),
        }
    }

    pub(crate) fn setting(message: impl Into<String>) -> Error {
        Error::Setting {
            message: message.into(),
        }
    }

    pub(crate) fn file(
        path: impl Into<PathBuf>,
        expected: &'static str,
        message: impl Into<String>,
    ) -> Error {
        Error::File {
            path: path.into(),
            expected,
            message: message.into(),
        }
    }

    pub(crate) fn program(path: impl Into<PathBuf>, message: impl Into<String>) -> Error {
        Error::Program {
            path: path.into(),
            message: message.into(),
        }
    }

    pub(crate) fn service(message: impl Into<String>) -> Error {
        Error::Service {
            message: message.into(),
        }
    }

    /// The error with `what: ` before its text (the file or endpoint it came from).
    pub(crate) fn within(self, what: &str) -> Error {
        self.map_message(|m| format!("{what}: {m}"))
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Error::Unset { var, .. } => format!("set {var}"),
            Error::Setting { .. } => {
                "see docs/registries.md for what each credentials source reads".into()
            }
            Error::File { expected, .. } => format!("the file must hold {expected}"),
            Error::Program { path, .. } => format!(
                "run {} by hand, with IMAGEBUMP_REGISTRY set to the registry host, to see \
                 what it prints",
                path.display()
            ),
            Error::Service { .. } => {
                "`imagebump registry check` shows what the source answers".into()
            }
        })
    }

    /// The error with its text passed through the redactor: a program, a file or a service
    /// may have quoted a secret.
    pub(crate) fn redacted(self) -> Error {
        self.map_message(|m| imagebump_http::redact(&m))
    }

    fn map_message(self, f: impl FnOnce(String) -> String) -> Error {
        match self {
            Error::Unset { var, message } => Error::Unset {
                var,
                message: f(message),
            },
            Error::Setting { message } => Error::Setting {
                message: f(message),
            },
            Error::File {
                path,
                expected,
                message,
            } => Error::File {
                path,
                expected,
                message: f(message),
            },
            Error::Program { path, message } => Error::Program {
                path,
                message: f(message),
            },
            Error::Service { message } => Error::Service {
                message: f(message),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_says_what_to_do() {
        let hint = |e: Error| e.hint().unwrap_or_default();
        assert_eq!(
            hint(Error::unset("AWS_REGION", "no region")),
            "set AWS_REGION"
        );
        assert_eq!(
            hint(Error::file("/k.json", "a service-account JSON key", "bad")),
            "the file must hold a service-account JSON key"
        );
        assert_eq!(
            hint(Error::program("/bin/creds", "exited with status 1")),
            "run /bin/creds by hand, with IMAGEBUMP_REGISTRY set to the registry host, to see \
             what it prints"
        );
        assert!(hint(Error::setting("x")).contains("docs/registries.md"));
        assert!(hint(Error::service("x")).contains("registry check"));
    }

    #[test]
    fn the_text_is_the_message_and_within_names_where_it_came_from() {
        let e = Error::file("/k.json", "a key", "not valid JSON (line 1, column 2)");
        assert_eq!(e.to_string(), "not valid JSON (line 1, column 2)");
        let e = e.within("GCP key file /k.json");
        assert_eq!(
            e.to_string(),
            "GCP key file /k.json: not valid JSON (line 1, column 2)"
        );
        assert!(matches!(
            e,
            Error::File {
                expected: "a key",
                ..
            }
        ));
    }

    #[test]
    fn a_held_secret_is_taken_out_of_the_text() {
        let secret = "credentials-error-test-secret-8f3a";
        imagebump_http::hold(secret);
        let e = Error::program("/bin/creds", format!("stderr: token {secret}")).redacted();
        assert!(!e.to_string().contains(secret), "{e}");
        assert!(matches!(e, Error::Program { .. }));
    }
}
