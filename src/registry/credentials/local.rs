//! Sources on this machine: an environment variable, a file, Docker's configuration,
//! `GITHUB_TOKEN`.

use std::path::Path;

use base64::Engine;

use super::{Credential, Environment, Error, Fetched, Source};
use imagebump_model::env::EnvVars;
use imagebump_model::name::DOCKER_HUB;

/// What an `env:`, `file:`, `dockerconfig` or `github` source holds for `host`. `None` when
/// a Docker configuration has no entry for the host (anonymous access).
pub(super) fn fetch(
    source: &Source,
    host: &str,
    env: &Environment,
) -> Result<Option<Fetched>, Error> {
    let fetched = |credential: Credential, via: String| Fetched {
        credential,
        expires_at: None,
        via,
    };
    match source {
        Source::Env(var) => {
            let value = env.get(var).ok_or_else(|| {
                Error::unset(
                    var,
                    format!("credentials env:{var}: the variable is not set"),
                )
            })?;
            let credential = Credential::from_pair(value.trim()).ok_or_else(|| {
                Error::setting(format!(
                    "credentials env:{var}: expected user:password in the variable"
                ))
            })?;
            Ok(Some(fetched(credential, format!("variable {var}"))))
        }
        Source::File(path) => read_file(path, host)
            .map(|c| c.map(|credential| fetched(credential, format!("file {}", path.display())))),
        Source::DockerConfig => Ok(docker_config(host)
            .map(|credential| fetched(credential, DOCKER_CONFIG_VIA.to_string()))),
        Source::GitHub => {
            let token = env.get(EnvVars::GITHUB_TOKEN).ok_or_else(|| {
                Error::unset(EnvVars::GITHUB_TOKEN, "credentials github: GITHUB_TOKEN is not set (in a workflow, pass it with env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }} and give the job `packages: read`)")
            })?;
            // GHCR takes any user name with a token; the actor's name reads best in its logs.
            let user = env.get(EnvVars::GITHUB_ACTOR).unwrap_or("imagebump");
            Ok(Some(fetched(
                Credential::new(user, token.trim()),
                EnvVars::GITHUB_TOKEN.to_string(),
            )))
        }
        other => Err(Error::setting(format!(
            "credentials {}: not a local source",
            other.describe()
        ))),
    }
}

/// Where a `dockerconfig` answer came from, for `registry check`.
pub(super) const DOCKER_CONFIG_VIA: &str = "Docker config";

/// The Docker config keys a host's entry may be filed under.
fn config_keys(host: &str) -> Vec<&str> {
    if host == DOCKER_HUB {
        vec![
            "https://index.docker.io/v1/",
            "index.docker.io",
            "docker.io",
            "registry-1.docker.io",
        ]
    } else {
        vec![host]
    }
}

/// Docker's `config.json` (`DOCKER_CONFIG` or `~/.docker`): `auths`, `credHelpers`,
/// `credsStore`.
pub(super) fn docker_config(host: &str) -> Option<Credential> {
    for key in config_keys(host) {
        match docker_credential::get_credential(key) {
            Ok(docker_credential::DockerCredential::UsernamePassword(u, p)) => {
                return Some(Credential::new(u, p))
            }
            // An identity token is a registry refresh token; token services (ACR, Harbor)
            // take it as the password of this well-known user.
            Ok(docker_credential::DockerCredential::IdentityToken(t)) => {
                return Some(Credential::new(IDENTITY_TOKEN_USER, t))
            }
            Err(e) => tracing::trace!(registry = key, error = %e, "no docker credential"),
        }
    }
    None
}

/// The user name registries expect with a Docker `identitytoken`.
const IDENTITY_TOKEN_USER: &str = "00000000-0000-0000-0000-000000000000";

/// `file:PATH`: a Docker config JSON (`{"auths": {...}}`, as a Kubernetes
/// `kubernetes.io/dockerconfigjson` secret mounts it) or `user:password`. Read on every ask,
/// so a rotated secret is picked up on refresh.
fn read_file(path: &Path, host: &str) -> Result<Option<Credential>, Error> {
    let shown = path.display();
    let fail =
        |why: String| Error::file(path, FILE_HOLDS, format!("credentials file:{shown}: {why}"));
    let bytes = crate::registry::read_small(path).map_err(|e| fail(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| fail("not UTF-8 text".into()))?;
    let trimmed = text.trim();
    if trimmed.starts_with('{') {
        let json: serde_json::Value = serde_json::from_str(trimmed).map_err(|e| {
            fail(format!(
                "not valid JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        return docker_config_json(&json, host).map_err(|e| fail(e.to_string()));
    }
    Credential::from_pair(trimmed)
        .map(Some)
        .ok_or_else(|| fail("expected user:password or a Docker config JSON".into()))
}

/// What a `file:` source's file must hold.
const FILE_HOLDS: &str = "user:password, or a Docker config JSON with an entry for the registry";

/// Why a Docker config JSON's entry for a registry gives no credential.
#[derive(Debug, thiserror::Error)]
enum DockerConfigError {
    #[error("expected an object with \"auths\"")]
    NotObject,
    #[error("auths[{0:?}] has neither auth nor username/password")]
    NoAuth(String),
    #[error("auths[{0:?}].auth is not base64 of user:password")]
    BadAuth(String),
}

/// The entry for `host` in a Docker config JSON's `auths` (or a legacy `.dockercfg` map).
/// `None` when the file has no entry for the host.
fn docker_config_json(
    json: &serde_json::Value,
    host: &str,
) -> Result<Option<Credential>, DockerConfigError> {
    let auths = json
        .get("auths")
        .or(Some(json))
        .and_then(|a| a.as_object())
        .ok_or(DockerConfigError::NotObject)?;
    let wanted = config_keys(host);
    let entry = auths.iter().find(|(k, _)| {
        let k = k
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        let k_host = k.split('/').next().unwrap_or(k);
        wanted.iter().any(|w| {
            let w = w.trim_start_matches("https://").trim_end_matches('/');
            k == w || k_host == w.split('/').next().unwrap_or(w)
        })
    });
    let Some((key, entry)) = entry else {
        if json.get("credHelpers").is_some() || json.get("credsStore").is_some() {
            tracing::debug!(registry = host, "credHelpers/credsStore in a file: source are not run; use dockerconfig with DOCKER_CONFIG");
        }
        return Ok(None);
    };
    let field = |name: &str| {
        entry
            .get(name)
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    };
    if let Some(token) = field("identitytoken") {
        return Ok(Some(Credential::new(IDENTITY_TOKEN_USER, token)));
    }
    if let (Some(u), Some(p)) = (field("username"), field("password")) {
        return Ok(Some(Credential::new(u, p)));
    }
    let auth = field("auth").ok_or_else(|| DockerConfigError::NoAuth(key.clone()))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| DockerConfigError::BadAuth(key.clone()))?;
    Credential::from_pair(&decoded)
        .map(Some)
        .ok_or_else(|| DockerConfigError::BadAuth(key.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    fn pair(c: Option<Credential>) -> Option<(String, String)> {
        c.map(|c| (c.username, c.password.expose_secret().to_string()))
    }

    #[test]
    fn docker_config_json_entries() {
        let json = serde_json::json!({"auths": {
            "https://registry.example:5000/v1/": {"auth": "dTE6cDE="},
            "ghcr.io": {"username": "u2", "password": "p2"},
            "example.azurecr.io": {"identitytoken": "rt"},
            "https://index.docker.io/v1/": {"auth": "aHViOmh1YnBhc3M="}
        }});
        assert_eq!(
            pair(docker_config_json(&json, "registry.example:5000").unwrap()),
            Some(("u1".into(), "p1".into()))
        );
        assert_eq!(
            pair(docker_config_json(&json, "ghcr.io").unwrap()),
            Some(("u2".into(), "p2".into()))
        );
        assert_eq!(
            pair(docker_config_json(&json, "example.azurecr.io").unwrap()),
            Some((IDENTITY_TOKEN_USER.into(), "rt".into()))
        );
        assert_eq!(
            pair(docker_config_json(&json, DOCKER_HUB).unwrap()),
            Some(("hub".into(), "hubpass".into()))
        );
        assert_eq!(pair(docker_config_json(&json, "quay.io").unwrap()), None);
        let bad = serde_json::json!({"auths": {"quay.io": {"auth": "!!"}}});
        let e = docker_config_json(&bad, "quay.io").unwrap_err();
        assert_eq!(
            e.to_string(),
            "auths[\"quay.io\"].auth is not base64 of user:password"
        );
        let e = docker_config_json(&serde_json::json!({"auths": {"quay.io": {}}}), "quay.io");
        assert_eq!(
            e.unwrap_err().to_string(),
            "auths[\"quay.io\"] has neither auth nor username/password"
        );
        let e = docker_config_json(&serde_json::json!([]), "quay.io").unwrap_err();
        assert!(matches!(e, DockerConfigError::NotObject), "{e:?}");
    }

    #[test]
    fn env_and_github_sources() {
        let env = Environment::from_pairs([
            ("CREDS", "bot:s3cret"),
            ("GITHUB_TOKEN", "ghs_x"),
            ("BAD", "nocolon"),
        ]);
        let got = fetch(&Source::Env("CREDS".into()), "h", &env)
            .unwrap()
            .unwrap();
        assert_eq!(got.credential.username, "bot");
        let e = fetch(&Source::Env("BAD".into()), "h", &env).unwrap_err();
        assert!(matches!(e, Error::Setting { .. }), "{e:?}");
        let e = e.to_string();
        assert!(e.contains("user:password") && !e.contains("nocolon"), "{e}");
        let e = fetch(&Source::Env("MISSING".into()), "h", &env).unwrap_err();
        assert_eq!(
            e.to_string(),
            "credentials env:MISSING: the variable is not set"
        );
        assert_eq!(e.hint().as_deref(), Some("set MISSING"));
        let e = fetch(&Source::GitHub, "ghcr.io", &Environment::default()).unwrap_err();
        assert_eq!(e.hint().as_deref(), Some("set GITHUB_TOKEN"));
        let gh = fetch(&Source::GitHub, "ghcr.io", &env).unwrap().unwrap();
        assert_eq!(gh.credential.username, "imagebump");
        assert_eq!(gh.credential.password.expose_secret(), "ghs_x");
    }
}
