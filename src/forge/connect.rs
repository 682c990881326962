//! Which forge a remote lives on, and connecting to it with the credentials the
//! environment holds. The rest of the run only sees a `Box<dyn Forge>`.

use secrecy::SecretString;

use imagebump_forge::gitea::{Gitea, GiteaSettings};
use imagebump_forge::github::GitHub;
use imagebump_forge::gitlab::{GitLab, GitLabAuth, GitLabSettings};
use imagebump_forge::{Forge, GitHubAuth, GitHubSettings};
use imagebump_model::env::EnvVars;
use imagebump_model::ForgeKind;

/// A connected forge, and the token `git push` should use (a GitHub App's installation
/// token; else the forge token), if any.
pub struct Connected {
    pub forge: Box<dyn Forge>,
    pub git_token: Option<SecretString>,
}

/// What the user asked for on the command line.
pub struct Request<'a> {
    /// The remote URL, without credentials.
    pub url: &'a str,
    pub kind: Option<ForgeKind>,
    /// `--forge-url`: the API base URL.
    pub api_url: Option<&'a str>,
    /// `--forge-repo`: `owner/name` (GitLab: the project path, or its numeric id).
    pub repo: Option<&'a str>,
}

fn var(name: &str) -> Option<String> {
    EnvVars::get(name).filter(|v| !v.is_empty())
}

fn first_var(names: &[&str]) -> Option<SecretString> {
    names.iter().find_map(|n| var(n)).map(SecretString::from)
}

/// The remote's host, lower-cased (`git@host:path` and URLs alike).
pub fn host_of(url: &str) -> Option<String> {
    let rest = match url.split_once("://") {
        Some((_, rest)) => rest,
        None => url.split_once('@').map_or(url, |(_, r)| r),
    };
    let authority = rest.split(['/', ':']).next()?;
    let host = authority.rsplit('@').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// The manifest repository's forge as a web site: its host and kind (`--forge`, else as
/// [`connect`] detects it). Release notes link a source on that host in that forge's style.
pub fn site_of(url: &str, kind: Option<ForgeKind>) -> Option<(String, ForgeKind)> {
    let host = host_of(url)?;
    let kind = kind.or_else(|| detect(&host, &var))?;
    Some((host, kind))
}

/// The forge a host is, when that can be told: the well-known hosts, the CI system
/// imagebump runs in, and hosts whose name says it.
pub fn detect(host: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<ForgeKind> {
    let ci_host = |var: &str| {
        env(var)
            .and_then(|u| host_of(&u))
            .is_some_and(|h| h == host)
    };
    if host == "github.com"
        || ci_host(EnvVars::GITHUB_SERVER_URL) && env(EnvVars::GITEA_ACTIONS).is_none()
    {
        return Some(ForgeKind::Github);
    }
    if host == "gitlab.com" || ci_host(EnvVars::CI_SERVER_URL) {
        return Some(ForgeKind::Gitlab);
    }
    if host == "codeberg.org" || ci_host(EnvVars::GITHUB_SERVER_URL) {
        // Gitea/Forgejo Actions set GITHUB_SERVER_URL (and GITEA_ACTIONS) too.
        return Some(ForgeKind::Gitea);
    }
    if host.contains("gitlab") {
        return Some(ForgeKind::Gitlab);
    }
    if host.contains("gitea") || host.contains("forgejo") {
        return Some(ForgeKind::Gitea);
    }
    None
}

/// Every variable a forge credential may come from.
const TOKEN_VARS: [&str; 8] = [
    EnvVars::IMAGEBUMP_FORGE_TOKEN,
    EnvVars::IMAGEBUMP_GITHUB_APP_ID,
    EnvVars::GITHUB_TOKEN,
    EnvVars::GITLAB_TOKEN,
    EnvVars::GITLAB_OAUTH_TOKEN,
    EnvVars::CI_JOB_TOKEN,
    EnvVars::GITEA_TOKEN,
    EnvVars::FORGEJO_TOKEN,
];

/// Why the forge of a remote could not be reached; each says what to pass or set.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot tell which forge {host} is; pass --forge github, gitlab or gitea (and --forge-url for a self-hosted API)")]
    UnknownForge { host: String },
    #[error("--forge-repo {0:?}: expected owner/name")]
    BadRepository(String),
    #[error("cannot tell the repository's owner/name from {0}; pass --forge-repo")]
    NoRepository(String),
    #[error("cannot tell the GitLab project from {0}; pass --forge-repo group/project")]
    NoProject(String),
    #[error("IMAGEBUMP_GITHUB_APP_ID {0:?} is not a number")]
    AppId(String),
    #[error("IMAGEBUMP_GITHUB_APP_ID needs IMAGEBUMP_GITHUB_APP_KEY_FILE (the app's private key)")]
    AppKeyMissing,
    #[error("IMAGEBUMP_GITHUB_APP_KEY_FILE {path}: {source}")]
    AppKey {
        path: String,
        source: std::io::Error,
    },
    /// The forge refused or could not be reached.
    #[error("{forge}: {source}{}", source.hint().map(|h| format!(" (hint: {h})")).unwrap_or_default())]
    Forge {
        forge: &'static str,
        source: imagebump_forge::Error,
    },
}

/// Connect to the forge of `req.url`. `Ok(None)` when no forge token is set (a dry run
/// then shows the plan without the pull requests' state).
pub async fn connect(req: &Request<'_>) -> Result<Option<Connected>, Error> {
    if TOKEN_VARS.iter().all(|v| var(v).is_none()) {
        return Ok(None);
    }
    let host = host_of(req.url).unwrap_or_default();
    let kind = match req.kind.or_else(|| detect(&host, &var)) {
        Some(k) => k,
        // A forge URL alone (GitHub Enterprise) has always meant GitHub.
        None if req.api_url.is_some() || var(EnvVars::GITHUB_API_URL).is_some() => {
            ForgeKind::Github
        }
        None => return Err(Error::UnknownForge { host }),
    };
    match kind {
        ForgeKind::Github => github(req, &host).await,
        ForgeKind::Gitlab => gitlab(req, &host).await,
        ForgeKind::Gitea => gitea(req, &host).await,
    }
}

/// `owner/name`: `--forge-repo` if given, else what the remote URL says.
fn repository(
    req: &Request<'_>,
    from_url: Option<(String, String)>,
) -> Result<(String, String), Error> {
    match (req.repo, from_url) {
        (Some(r), _) => match r.rsplit_once('/') {
            Some((o, n)) if !o.is_empty() && !n.is_empty() => Ok((o.to_string(), n.to_string())),
            _ => Err(Error::BadRepository(r.to_string())),
        },
        (None, Some(pair)) => Ok(pair),
        (None, None) => Err(Error::NoRepository(req.url.to_string())),
    }
}

fn failed(forge: &'static str) -> impl FnOnce(imagebump_forge::Error) -> Error {
    move |source| Error::Forge { forge, source }
}

async fn github(req: &Request<'_>, host: &str) -> Result<Option<Connected>, Error> {
    let auth = match (
        var(EnvVars::IMAGEBUMP_GITHUB_APP_ID),
        first_var(&[EnvVars::IMAGEBUMP_FORGE_TOKEN, EnvVars::GITHUB_TOKEN]),
    ) {
        (Some(id), _) => {
            let app_id: u64 = id.parse().map_err(|_| Error::AppId(id.clone()))?;
            let key_file =
                var(EnvVars::IMAGEBUMP_GITHUB_APP_KEY_FILE).ok_or(Error::AppKeyMissing)?;
            let pem = std::fs::read_to_string(&key_file).map_err(|source| Error::AppKey {
                path: key_file.clone(),
                source,
            })?;
            GitHubAuth::App {
                app_id,
                private_key_pem: SecretString::from(pem),
            }
        }
        (None, Some(token)) => GitHubAuth::Token(token),
        (None, None) => return Ok(None),
    };
    let (owner, repo) = repository(
        req,
        imagebump_forge::github::repo_from_url(req.url).map(|(_, o, n)| (o, n)),
    )?;
    let api_url = req
        .api_url
        .map(str::to_string)
        .or_else(|| var(EnvVars::GITHUB_API_URL))
        .unwrap_or_else(|| imagebump_forge::github::api_url_for_host(host));
    let forge = GitHub::connect(GitHubSettings {
        api_url,
        owner,
        repo,
        auth,
    })
    .await
    .map_err(failed("GitHub"))?;
    let git_token = forge.git_token().await.ok();
    Ok(Some(Connected {
        forge: Box::new(forge),
        git_token,
    }))
}

async fn gitlab(req: &Request<'_>, host: &str) -> Result<Option<Connected>, Error> {
    // A job token can read but, on most instances, not open merge requests or push: it is
    // the last resort, and says so when refused.
    let (auth, token) =
        if let Some(t) = first_var(&[EnvVars::IMAGEBUMP_FORGE_TOKEN, EnvVars::GITLAB_TOKEN]) {
            (GitLabAuth::PrivateToken(t.clone()), Some(t))
        } else if let Some(t) = first_var(&[EnvVars::GITLAB_OAUTH_TOKEN]) {
            (GitLabAuth::OAuth(t), None)
        } else if let Some(t) = first_var(&[EnvVars::CI_JOB_TOKEN]) {
            (GitLabAuth::JobToken(t), None)
        } else {
            return Ok(None);
        };
    let project = match (req.repo, imagebump_forge::gitlab::project_from_url(req.url)) {
        (Some(p), _) => p.to_string(),
        (None, Some(p)) => p,
        (None, None) => return Err(Error::NoProject(req.url.to_string())),
    };
    let in_ci = var(EnvVars::CI_SERVER_URL)
        .and_then(|u| host_of(&u))
        .is_some_and(|h| h == host);
    let api_url = req
        .api_url
        .map(str::to_string)
        .or_else(|| var(EnvVars::CI_API_V4_URL).filter(|_| in_ci))
        .unwrap_or_else(|| imagebump_forge::gitlab::api_url_for_host(host));
    let forge = GitLab::new(GitLabSettings {
        api_url,
        project,
        auth,
    })
    .map_err(failed("GitLab"))?;
    Ok(Some(Connected {
        forge: Box::new(forge),
        git_token: token,
    }))
}

async fn gitea(req: &Request<'_>, host: &str) -> Result<Option<Connected>, Error> {
    let Some(token) = first_var(&[
        EnvVars::IMAGEBUMP_FORGE_TOKEN,
        EnvVars::GITEA_TOKEN,
        EnvVars::FORGEJO_TOKEN,
        EnvVars::GITHUB_TOKEN,
    ]) else {
        return Ok(None);
    };
    let (owner, repo) = repository(req, imagebump_forge::gitea::repo_from_url(req.url))?;
    let api_url = req
        .api_url
        .map(str::to_string)
        .unwrap_or_else(|| imagebump_forge::gitea::api_url_for_host(host));
    let forge = Gitea::new(GiteaSettings {
        api_url,
        owner,
        repo,
        token: token.clone(),
    })
    .map_err(failed("Gitea"))?;
    Ok(Some(Connected {
        forge: Box::new(forge),
        git_token: Some(token),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn hosts_and_ci_systems_tell_the_forge() {
        let none = env(&[]);
        assert_eq!(detect("github.com", &none), Some(ForgeKind::Github));
        assert_eq!(detect("gitlab.com", &none), Some(ForgeKind::Gitlab));
        assert_eq!(detect("codeberg.org", &none), Some(ForgeKind::Gitea));
        assert_eq!(detect("gitlab.acme.io", &none), Some(ForgeKind::Gitlab));
        assert_eq!(detect("git.acme.io", &none), None);
        let gitlab_ci = env(&[("CI_SERVER_URL", "https://git.acme.io")]);
        assert_eq!(detect("git.acme.io", &gitlab_ci), Some(ForgeKind::Gitlab));
        let ghes = env(&[("GITHUB_SERVER_URL", "https://git.acme.io")]);
        assert_eq!(detect("git.acme.io", &ghes), Some(ForgeKind::Github));
        let gitea_actions = env(&[
            ("GITHUB_SERVER_URL", "https://git.acme.io"),
            ("GITEA_ACTIONS", "true"),
        ]);
        assert_eq!(
            detect("git.acme.io", &gitea_actions),
            Some(ForgeKind::Gitea)
        );
    }

    #[test]
    fn hosts_of_remotes() {
        assert_eq!(
            host_of("https://GitLab.com/a/b.git").as_deref(),
            Some("gitlab.com")
        );
        assert_eq!(
            host_of("git@git.acme.io:a/b.git").as_deref(),
            Some("git.acme.io")
        );
        assert_eq!(
            host_of("ssh://git@git.acme.io:2222/a/b").as_deref(),
            Some("git.acme.io")
        );
        assert_eq!(
            host_of("http://127.0.0.1:3000/a/b").as_deref(),
            Some("127.0.0.1")
        );
    }
}
