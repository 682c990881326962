//! One fault, one behaviour: the same HTTP faults against GitHub, GitLab, Gitea and a
//! registry (library clients on wiremock servers) end in the same number of attempts and the
//! same kind of error, with no token in the message. The rule lives in `imagebump-http`.

// A test crate may panic, count, slice and read the environment: the no-panic lints of
// Cargo.toml are for the library.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::string_slice,
    clippy::disallowed_methods
)]

use std::time::Duration;

use imagebump::registry::credentials::Environment;
use imagebump::registry::Registries;
use imagebump_forge::gitea::{Gitea, GiteaSettings};
use imagebump_forge::gitlab::{GitLab, GitLabAuth, GitLabSettings};
use imagebump_forge::{Forge, GitHub, GitHubAuth, GitHubSettings};
use imagebump_http::{Options, RetryPolicy, Transport};
use imagebump_model::config::RegistryConfig;
use imagebump_model::name::parse_name;
use secrecy::SecretString;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_FaultTableToken0123456789abcdef";

/// Short timeouts and backoff, the default attempts and budget.
/// The timeout of the requests: short, for the fault that never answers.
const TIMEOUT: Duration = Duration::from_millis(500);

/// The timeout when the fault is about size: reading 16 MiB of a fake on a loaded machine
/// must not become a timeout and a retry (the attempt count is what is checked).
const PATIENT: Duration = Duration::from_secs(30);

fn options(timeout: Duration) -> Options {
    Options {
        timeout,
        retry: RetryPolicy {
            first_backoff: Duration::from_millis(1),
            ..RetryPolicy::default()
        },
        ..Options::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    GitHub,
    GitLab,
    Gitea,
    Registry,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    RateLimited,
    Server,
    Transport,
    TooLarge,
    Unauthorized,
}

/// What a client's request ended in: the kind of error and its whole text.
async fn request(target: Target, uri: &str, post: bool, timeout: Duration) -> (Kind, String) {
    let forge_error = |e: imagebump_forge::Error| {
        use imagebump_forge::Error as E;
        let kind = match &e {
            E::RateLimited { .. } => Kind::RateLimited,
            E::Status { status, .. } if *status >= 500 => Kind::Server,
            E::Transport { message, .. }
                if message.contains("more than") || message.contains("larger than") =>
            {
                Kind::TooLarge
            }
            E::Transport { .. } => Kind::Transport,
            E::Unauthorized { .. } => Kind::Unauthorized,
            other => panic!("{target:?}: {other:?}"),
        };
        (kind, format!("{e} {e:?} {:?}", e.hint()))
    };
    let token = || SecretString::from(TOKEN.to_string());
    let transport = || Transport::new(options(timeout)).expect("transport");
    let forge: Box<dyn Forge> = match target {
        Target::GitHub => Box::new(
            GitHub::connect(GitHubSettings {
                api_url: uri.to_string(),
                owner: "o".into(),
                repo: "r".into(),
                auth: GitHubAuth::Token(token()),
            })
            .await
            .expect("connect")
            .with_transport(transport()),
        ),
        Target::GitLab => Box::new(
            GitLab::new(GitLabSettings {
                api_url: format!("{uri}/api/v4"),
                project: "g/p".into(),
                auth: GitLabAuth::PrivateToken(token()),
            })
            .expect("client")
            .with_transport(transport()),
        ),
        Target::Gitea => Box::new(
            Gitea::new(GiteaSettings {
                api_url: format!("{uri}/api/v1"),
                owner: "o".into(),
                repo: "r".into(),
                token: token(),
            })
            .expect("client")
            .with_transport(transport()),
        ),
        Target::Registry => return registry(uri, timeout).await,
    };
    let result = if post {
        forge.comment(1, "hello").await
    } else {
        forge.open_pulls("imagebump/").await.map(drop)
    };
    forge_error(result.expect_err("a fault"))
}

async fn registry(uri: &str, timeout: Duration) -> (Kind, String) {
    use imagebump::registry::Error as E;
    let config: RegistryConfig = serde_json::from_value(serde_json::json!({
        "prefix": "faults.test",
        "url": uri,
    }))
    .expect("config");
    let env = Environment::from_pairs(Vec::<(String, String)>::new());
    let registries =
        Registries::with_http(vec![config], env, options(timeout)).expect("registries");
    let image = parse_name("faults.test/team/app").expect("name");
    let client = registries.client_for(&image).expect("client");
    let e = client.list_tags("team/app").await.expect_err("a fault");
    let kind = match &e {
        E::RateLimited { .. } => Kind::RateLimited,
        E::Server { .. } => Kind::Server,
        E::Transport { .. } | E::Timeout { .. } => Kind::Transport,
        E::TooLarge { .. } => Kind::TooLarge,
        E::Invalid { reason, .. } if reason.contains("larger than") => Kind::TooLarge,
        E::Unauthorized { .. } => Kind::Unauthorized,
        other => panic!("registry: {other:?}"),
    };
    (kind, format!("{e} {e:?} {:?}", e.hint()))
}

struct Fault {
    name: &'static str,
    answer: fn() -> ResponseTemplate,
    post: bool,
    attempts: usize,
    kind: Kind,
}

fn faults() -> Vec<Fault> {
    let big = || ResponseTemplate::new(200).set_body_string("x".repeat(33 * 1024 * 1024));
    vec![
        Fault {
            name: "429 with Retry-After",
            answer: || ResponseTemplate::new(429).insert_header("retry-after", "1"),
            post: true,
            attempts: 4,
            kind: Kind::RateLimited,
        },
        Fault {
            name: "bare 429",
            answer: || ResponseTemplate::new(429),
            post: false,
            attempts: 4,
            kind: Kind::RateLimited,
        },
        Fault {
            name: "502 on a GET",
            answer: || ResponseTemplate::new(502),
            post: false,
            attempts: 4,
            kind: Kind::Server,
        },
        Fault {
            name: "502 on a POST",
            answer: || ResponseTemplate::new(502),
            post: true,
            attempts: 1,
            kind: Kind::Server,
        },
        Fault {
            name: "timeout",
            answer: || {
                ResponseTemplate::new(200)
                    .set_body_string("[]")
                    .set_delay(Duration::from_secs(3))
            },
            post: false,
            // A timed-out request is asked once more, not until the attempts run out.
            attempts: 2,
            kind: Kind::Transport,
        },
        Fault {
            name: "truncated body",
            answer: || {
                ResponseTemplate::new(200)
                    .insert_header("content-length", "100")
                    .set_body_string("[")
            },
            post: false,
            attempts: 4,
            kind: Kind::Transport,
        },
        Fault {
            name: "oversized body",
            answer: big,
            post: false,
            attempts: 1,
            kind: Kind::TooLarge,
        },
        Fault {
            name: "401",
            answer: || ResponseTemplate::new(401).set_body_string(format!("bad token {TOKEN}")),
            post: false,
            attempts: 1,
            kind: Kind::Unauthorized,
        },
    ]
}

async fn run(target: Target) {
    for fault in faults() {
        // The registry makes no POST.
        if fault.post && target == Target::Registry && fault.name != "429 with Retry-After" {
            continue;
        }
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with((fault.answer)())
            .mount(&server)
            .await;
        let timeout = if fault.kind == Kind::TooLarge {
            PATIENT
        } else {
            TIMEOUT
        };
        let (kind, text) = request(target, &server.uri(), fault.post, timeout).await;
        let attempts = server.received_requests().await.map_or(0, |r| r.len());
        assert_eq!(kind, fault.kind, "{target:?}, {}: {text}", fault.name);
        // A registry that has never answered is not asked again after a timeout.
        let expected = if target == Target::Registry && fault.name == "timeout" {
            1
        } else {
            fault.attempts
        };
        assert_eq!(attempts, expected, "{target:?}, {}: {text}", fault.name);
        assert!(!text.contains(TOKEN), "{target:?}, {}: {text}", fault.name);
    }
}

#[tokio::test]
async fn github() {
    run(Target::GitHub).await;
}

#[tokio::test]
async fn gitlab() {
    run(Target::GitLab).await;
}

#[tokio::test]
async fn gitea() {
    run(Target::Gitea).await;
}

#[tokio::test]
async fn registry_() {
    run(Target::Registry).await;
}

/// Pages that never end, each a valid answer padded to 10 MB, with a `Link` (and GitLab's
/// `X-Next-Page`) to the next one.
struct PaddedPages {
    registry: bool,
    base: String,
}

impl wiremock::Respond for PaddedPages {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let page: usize = request
            .url
            .query_pairs()
            .find(|(k, _)| k == "page" || k == "last")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(1);
        let pad = " ".repeat(10 * 1024 * 1024);
        let body = if self.registry {
            format!("{{\"tags\": []{pad}}}")
        } else {
            // Somebody else's pull request, in every forge's shape.
            format!(
                "[{{\"number\": {page}, \"iid\": {page}, \"state\": \"open\", \
                 \"source_branch\": \"someone/else\", \"target_branch\": \"main\", \
                 \"head\": {{\"ref\": \"someone/else\", \"repo\": null}}, \
                 \"base\": {{\"ref\": \"main\", \"repo\": null}}}}{pad}]"
            )
        };
        let mut next = wiremock::http::Url::parse(&self.base).expect("base");
        next.set_path(request.url.path());
        next.set_query(request.url.query());
        let key = if self.registry { "last" } else { "page" };
        let query: Vec<(String, String)> = next
            .query_pairs()
            .filter(|(k, _)| k != key)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        next.query_pairs_mut()
            .clear()
            .extend_pairs(query)
            .append_pair(key, &(page + 1).to_string());
        ResponseTemplate::new(200)
            .insert_header("link", format!("<{next}>; rel=\"next\"").as_str())
            .insert_header("x-next-page", (page + 1).to_string().as_str())
            .set_body_raw(body, "application/json")
    }
}

/// A listing is capped over all its pages, not only per page: endless padded pages end in
/// an error after 64 MiB (a forge) or 32 MiB (a registry's tag list), not after thousands
/// of requests.
#[tokio::test]
async fn endless_padded_pages_are_capped_per_listing() {
    for target in [
        Target::GitHub,
        Target::GitLab,
        Target::Gitea,
        Target::Registry,
    ] {
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(PaddedPages {
                registry: target == Target::Registry,
                base: server.uri(),
            })
            .mount(&server)
            .await;
        let text = match target {
            Target::Registry => {
                let (_, text) = registry(&server.uri(), PATIENT).await;
                text
            }
            _ => {
                let (kind, text) = request(target, &server.uri(), false, PATIENT).await;
                assert_eq!(kind, Kind::TooLarge, "{target:?}: {text}");
                text
            }
        };
        let pages = server.received_requests().await.map_or(0, |r| r.len());
        assert!(text.contains("over"), "{target:?}: {text}");
        let most = if target == Target::Registry { 4 } else { 7 };
        assert!(pages <= most, "{target:?}: {pages} pages read: {text}");
    }
}
