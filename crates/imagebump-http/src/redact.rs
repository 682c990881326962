//! One redactor: what could be a credential never reaches a log line or an error message.
//!
//! Two passes: the secret values the run holds ([`hold`]: tokens from the environment,
//! registry passwords, tokens and cloud keys it obtained) are replaced wherever they
//! appear, then anything shaped like a credential is: GitHub and GitLab tokens, JWTs, AWS
//! access key ids, private-key PEM blocks, the value after `Bearer`, `Basic`,
//! `Authorization:` or a secret-named key (`password=`, `aws_secret_access_key:`...), the
//! user part of a URL, and query parameters that carry secrets (`access_token`,
//! `private_token`, `X-Amz-Signature`...).

use std::sync::{LazyLock, RwLock};

use regex::{Captures, Regex};

const REDACTED: &str = "<redacted>";

/// Credential-shaped text; groups 1 and 2 (when present) are kept around the replacement.
static PATTERNS: LazyLock<Option<Vec<Regex>>> = LazyLock::new(|| {
    [
        // Tokens by their shape: GitHub's prefixes, GitLab's glpat-/gldt-..., JWTs.
        r"\b(?:gh[pousr]_[A-Za-z0-9_]+|github_pat_[A-Za-z0-9_]+|gl[a-z]{2,4}-[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_.-]+)",
        // A long value after an auth scheme or an Authorization header.
        r"(?i)\b(bearer\s+|basic\s+|authorization:\s*(?:[a-z]+\s+)?)[A-Za-z0-9._~+/=-]{20,}",
        // user:password@ (or token@) in a URL, to the last `@` of the authority (a
        // password may hold one).
        r#"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s?#"]+(@)"#,
        // AWS access key ids (long-term and temporary).
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}\b",
        // A private key in PEM, whole (a GCP key file's `private_key`), never past a quote:
        // a JSON log line stays JSON.
        r#"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[^"]*?-----END [A-Z ]*PRIVATE KEY-----|[^"]*)"#,
        // A value after a key that names a secret: `password=...`, `"client_secret": "..."`,
        // `aws_secret_access_key = ...` (a helper echoing its configuration).
        r#"(?i)(\b(?:aws_secret_access_key|secret_access_key|secretaccesskey|aws_session_token|session_token|sessiontoken|client_secret|private_key|password|passwd)["']?\s*[:=]\s*["']?)[^\s"',;&]{8,}"#,
        // Query parameters that carry secrets.
        r"(?i)([?&;](?:access_token|private_token|job_token|token|password|passwd|secret|client_secret|api_key|apikey|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&#\s]+",
    ]
    .iter()
    .map(|p| Regex::new(p))
    .collect::<Result<Vec<_>, _>>()
    .ok()
});

/// The secret values the run holds, longest first (so that a secret holding another is
/// replaced whole). Process-wide: a secret is a secret in every message, whichever client
/// or stage quotes it.
static HELD: LazyLock<RwLock<Vec<String>>> = LazyLock::new(|| RwLock::new(Vec::new()));

/// Values shorter than this are not held: replacing them would rewrite ordinary words, and
/// no token or key is that short.
pub const MIN_HELD: usize = 6;

/// Remember `secret` (a token, a password, a key the run holds): from now on [`redact`],
/// and so every error and log line that passes through it, replaces it wherever it
/// appears. Blank and very short values are ignored.
pub fn hold(secret: &str) {
    let secret = secret.trim();
    if secret.chars().count() < MIN_HELD {
        return;
    }
    let Ok(mut held) = HELD.write() else {
        return;
    };
    if !held.iter().any(|h| h == secret) {
        held.push(secret.to_string());
        held.sort_by_key(|h| std::cmp::Reverse(h.len()));
    }
}

/// `text` with the held secrets ([`hold`]) replaced, and nothing else.
pub fn held_removed(text: &str) -> String {
    replace_held(text)
}

/// `text` with the held secrets replaced.
fn replace_held(text: &str) -> String {
    let mut out = text.to_string();
    let held = match HELD.read() {
        Ok(h) => h,
        // A writer panicked mid-push: the list itself is still whole.
        Err(poisoned) => poisoned.into_inner(),
    };
    for secret in held.iter() {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    out
}

/// `text` with the secret values the run holds ([`hold`]) and anything shaped like a
/// credential replaced by `<redacted>`.
pub fn redact(text: &str) -> String {
    let Some(patterns) = PATTERNS.as_ref() else {
        // The patterns are constants that compile; should one not, say nothing rather than
        // risk a secret.
        return "<details withheld>".to_string();
    };
    let mut out = replace_held(text);
    for re in patterns {
        out = re
            .replace_all(&out, |c: &Captures<'_>| {
                let kept = |i| c.get(i).map_or("", |m| m.as_str());
                format!("{}{REDACTED}{}", kept(1), kept(2))
            })
            .into_owned();
    }
    out
}

/// A URL fit for a message: no user part, no secret query parameters.
pub fn url(url: &str) -> String {
    redact(url)
}

/// A redactor that also knows the secrets its client holds.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

impl Redactor {
    /// Also replace `secret` wherever it appears (ignored when empty).
    pub fn with(mut self, secret: &str) -> Redactor {
        let secret = secret.trim();
        if !secret.is_empty() {
            self.secrets.push(secret.to_string());
        }
        self
    }

    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            out = out.replace(secret.as_str(), REDACTED);
        }
        redact(&out)
    }
}

/// An error and its sources, `: `-separated, each said once (first lines only: some
/// libraries append a backtrace), redacted.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(e) = current {
        let text = e.to_string();
        let text = text.lines().next().unwrap_or_default().trim().to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    redact(&parts.join(": "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_by_shape() {
        let text = "Bearer ghp_abcdefABCDEF0123456789 and token github_pat_11AAA_bbb \
                    and eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjF9.sig and ghs_xyz and glpat-Secret0123456789";
        let out = redact(text);
        for secret in [
            "ghp_abc",
            "github_pat_11",
            "eyJhbG",
            "ghs_xyz",
            "glpat-Secret",
        ] {
            assert!(!out.contains(secret), "{out}");
        }
        assert!(out.starts_with("Bearer <redacted>"), "{out}");
        assert_eq!(
            redact("authorization: token 0123456789abcdef0123456789abcdef01234567"),
            "authorization: token <redacted>"
        );
        assert_eq!(
            redact("Authorization: Basic dXNlcjpwYXNzd29yZGxvbmdlbm91Z2g="),
            "Authorization: Basic <redacted>"
        );
        let plain = "Not Found: the installation token expired; Bearer authentication";
        assert_eq!(redact(plain), plain);
    }

    #[test]
    fn urls_lose_user_parts_and_secret_parameters() {
        assert_eq!(
            url("https://x-access-token:ghs_secret@github.com/o/r.git"),
            "https://<redacted>@github.com/o/r.git"
        );
        assert_eq!(
            redact("redirects to https://elsewhere.example/?private_token=abc123&page=2"),
            "redirects to https://elsewhere.example/?private_token=<redacted>&page=2"
        );
        assert_eq!(
            url("https://s3.example/blob?X-Amz-Signature=deadbeef&X-Amz-Expires=60"),
            "https://s3.example/blob?X-Amz-Signature=<redacted>&X-Amz-Expires=60"
        );
        let plain = "http://127.0.0.1:5000/v2/a/tags/list?n=1000&last=v1";
        assert_eq!(url(plain), plain);
        // Every spelling: upper-case schemes, ssh, a password holding `@`.
        assert_eq!(url("HTTP://x:tok@host/r"), "HTTP://<redacted>@host/r");
        assert_eq!(url("ssh://git:tok@host/r"), "ssh://<redacted>@host/r");
        assert_eq!(url("https://x:p@ss@host/r"), "https://<redacted>@host/r");
        assert_eq!(
            redact("see https://example.com/x or mail me@example.com"),
            "see https://example.com/x or mail me@example.com"
        );
    }

    #[test]
    fn held_secrets_anywhere() {
        let secret = "held-value-7Hq2-not-shaped";
        let text = format!("helper said: login {secret} failed ({secret})");
        assert_eq!(redact(&text), text, "not held yet");
        hold(secret);
        hold("short");
        assert_eq!(
            redact(&text),
            "helper said: login <redacted> failed (<redacted>)"
        );
        assert_eq!(redact("too short to hold"), "too short to hold");
    }

    #[test]
    fn cloud_secrets_by_shape() {
        let text = "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n\
                    {\"client_secret\": \"abc~def.ghi-jkl_mno\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----\n\"}\n\
                    AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEJr//////////wEaCXVz";
        let out = redact(text);
        for secret in [
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI",
            "abc~def",
            "MIIEv",
            "IQoJb3JpZ2lu",
        ] {
            assert!(!out.contains(secret), "{secret}: {out}");
        }
        let plain = "expected user:password on stdout; the token realm answered 401";
        assert_eq!(redact(plain), plain);
        let json = r#"{"message":"cannot reach https://r.example:443","by":"ops@example.com"}"#;
        assert_eq!(redact(json), json);
        assert_eq!(
            redact(r#"{"message":"key -----BEGIN PRIVATE KEY-----\nMIIE cut","level":"WARN"}"#),
            r#"{"message":"key <redacted>","level":"WARN"}"#
        );
    }

    #[test]
    fn known_secrets_anywhere() {
        let r = Redactor::default().with("s3cr3t-not-shaped").with("  ");
        assert_eq!(
            r.apply("token s3cr3t-not-shaped refused"),
            "token <redacted> refused"
        );
        assert_eq!(format!("{r:?}"), "Redactor(1 secrets)");
    }

    #[test]
    fn error_chains_once_each_and_redacted() {
        #[derive(Debug)]
        struct E(&'static str, Option<Box<E>>);
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|e| e as _)
            }
        }
        let e = E(
            "error sending request for url (https://u:p@h/x)",
            Some(Box::new(E(
                "connection refused\nbacktrace...",
                Some(Box::new(E("connection refused", None))),
            ))),
        );
        assert_eq!(
            error_chain(&e),
            "error sending request for url (https://<redacted>@h/x): connection refused"
        );
    }
}
