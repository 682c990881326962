//! Registry authentication: challenges, credentials, bearer tokens.

use std::collections::HashMap;

use base64::Engine;
use secrecy::{ExposeSecret, SecretString};

/// A user name and password (or token) for one registry.
#[derive(Clone)]
pub struct Credential {
    pub username: String,
    pub password: SecretString,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credential({}, ***)", self.username)
    }
}

impl Credential {
    pub fn basic_header(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password.expose_secret());
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }

    /// `user:password` as held in an environment variable or a Docker config `auth` field.
    pub fn from_pair(pair: &str) -> Option<Credential> {
        let (u, p) = pair.split_once(':')?;
        Some(Credential {
            username: u.to_string(),
            password: SecretString::from(p.to_string()),
        })
    }
}

/// Where a registry's credentials come from (`registries[].credentials`).
pub fn lookup(spec: Option<&str>, host: &str) -> Result<Option<Credential>, String> {
    match spec {
        Some(s) if s.starts_with("env:") => {
            let var = &s[4..];
            let value = std::env::var(var)
                .map_err(|_| format!("credentials {s}: environment variable {var} is not set"))?;
            Credential::from_pair(value.trim())
                .map(Some)
                .ok_or_else(|| format!("credentials {s}: expected user:password in {var}"))
        }
        None | Some("dockerconfig") => Ok(docker_config(host)),
        Some(other) => Err(format!(
            "unknown credentials source {other:?} (use env:VAR or dockerconfig)"
        )),
    }
}

/// Docker's `config.json` (`DOCKER_CONFIG` or `~/.docker`): `auths`, `credHelpers`, `credsStore`.
fn docker_config(host: &str) -> Option<Credential> {
    let keys: Vec<&str> = if host == super::name::DOCKER_HUB {
        vec![
            "https://index.docker.io/v1/",
            "index.docker.io",
            "docker.io",
            "registry-1.docker.io",
        ]
    } else {
        vec![host]
    };
    for key in keys {
        match docker_credential::get_credential(key) {
            Ok(docker_credential::DockerCredential::UsernamePassword(u, p)) => {
                return Some(Credential {
                    username: u,
                    password: SecretString::from(p),
                })
            }
            Ok(docker_credential::DockerCredential::IdentityToken(t)) => {
                return Some(Credential {
                    username: "<token>".into(),
                    password: SecretString::from(t),
                })
            }
            Err(e) => tracing::trace!(registry = key, error = %e, "no docker credential"),
        }
    }
    None
}

/// A parsed `WWW-Authenticate` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let (scheme, rest) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let params = parse_params(rest);
    Some(Challenge::Bearer {
        realm: params.get("realm")?.clone(),
        service: params.get("service").cloned(),
    })
}

/// `k="v", k2=v2` (values may contain commas inside quotes).
fn parse_params(s: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let (value, remaining) = if let Some(q) = after.strip_prefix('"') {
            match q.find('"') {
                Some(end) => (&q[..end], &q[end + 1..]),
                None => (q, ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            }
        };
        out.insert(key, value.trim().to_string());
        rest = remaining.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        assert_eq!(parse_challenge("Basic realm=\"x\""), Some(Challenge::Basic));
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into())
            })
        );
        assert_eq!(parse_challenge("Negotiate"), None);
    }

    #[test]
    fn credentials_never_print_their_secret() {
        let c = Credential::from_pair("u:s3cret").unwrap();
        assert!(!format!("{c:?}").contains("s3cret"));
    }
}
