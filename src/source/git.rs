//! A small typed wrapper over the `git` CLI, isolated from the user's git configuration.
//!
//! Credentials never reach the command line, the remote URL or `.git/config`: a token is
//! passed as an HTTP `Authorization` header scoped to the remote's origin, through git's
//! environment-carried configuration (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`).

use std::path::Path;
use std::process::{Command, Output};

use base64::Engine;
use secrecy::{ExposeSecret, SecretString};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("git is not installed or not runnable: {0} (install git >= 2.31)")]
    Spawn(std::io::Error),
    #[error("git {command} failed: {stderr}")]
    Failed { command: String, stderr: String },
}

pub struct Git {
    token: Option<SecretString>,
}

impl Git {
    pub fn new(token: Option<SecretString>) -> Self {
        Git { token }
    }

    fn command(&self, url_for_auth: Option<&str>) -> Command {
        let mut cmd = Command::new("git");
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .env_remove("GIT_ASKPASS")
            .env_remove("SSH_ASKPASS");
        if let (Some(token), Some(url)) = (&self.token, url_for_auth.and_then(http_origin)) {
            let basic = base64::engine::general_purpose::STANDARD
                .encode(format!("x-access-token:{}", token.expose_secret()));
            cmd.env("GIT_CONFIG_COUNT", "1")
                .env("GIT_CONFIG_KEY_0", format!("http.{url}.extraHeader"))
                .env(
                    "GIT_CONFIG_VALUE_0",
                    format!("Authorization: Basic {basic}"),
                );
        }
        cmd
    }

    fn run(&self, mut cmd: Command, what: &str) -> Result<Output, Error> {
        tracing::debug!(command = what, "git");
        let out = cmd.output().map_err(Error::Spawn)?;
        if !out.status.success() {
            return Err(Error::Failed {
                command: what.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(out)
    }

    /// `git clone --depth 1` of one branch or tag into `dest`.
    pub fn clone_shallow(
        &self,
        url: &str,
        git_ref: Option<&str>,
        dest: &Path,
    ) -> Result<(), Error> {
        let mut cmd = self.command(Some(url));
        cmd.args([
            "clone",
            "--quiet",
            "--depth",
            "1",
            "--single-branch",
            "--no-tags",
        ]);
        if let Some(r) = git_ref {
            cmd.args(["--branch", r]);
        }
        cmd.arg("--").arg(url).arg(dest);
        self.run(cmd, "clone").map(|_| ())
    }

    /// The commit `HEAD` points at in `dir`.
    pub fn head(&self, dir: &Path) -> Result<String, Error> {
        let mut cmd = self.command(None);
        cmd.arg("-C")
            .arg(dir)
            .args(["rev-parse", "--verify", "--quiet", "HEAD"]);
        let out = self.run(cmd, "rev-parse")?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

/// `https://host[:port]/` of an HTTP(S) URL, the scope of the auth header.
fn http_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "https" && scheme != "http" {
        return None;
    }
    let host = rest.split('/').next()?;
    Some(format!("{scheme}://{host}/"))
}

/// Remove `user:token@` from an HTTP(S) URL, returning the clean URL and the secret part.
pub fn split_credentials(url: &str) -> (String, Option<SecretString>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    if scheme != "https" && scheme != "http" {
        return (url.to_string(), None);
    }
    let host_end = rest.find('/').unwrap_or(rest.len());
    match rest[..host_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let secret = userinfo.split_once(':').map_or(userinfo, |(_, p)| p);
            let clean = format!("{scheme}://{}", &rest[at + 1..]);
            (clean, Some(SecretString::from(secret.to_string())))
        }
        None => (url.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_split_from_urls() {
        let (url, tok) = split_credentials("https://x-access-token:s3cret@github.com/org/r.git");
        assert_eq!(url, "https://github.com/org/r.git");
        assert_eq!(tok.unwrap().expose_secret(), "s3cret");
        let (url, tok) = split_credentials("https://github.com/org/r.git");
        assert_eq!(url, "https://github.com/org/r.git");
        assert!(tok.is_none());
        assert_eq!(
            http_origin("http://127.0.0.1:8080/a/b.git").unwrap(),
            "http://127.0.0.1:8080/"
        );
        assert_eq!(http_origin("git://h/x"), None);
    }
}
