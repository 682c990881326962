//! One fault, one behaviour: the same HTTP faults against GitHub, GitLab, Gitea and a
//! registry (library clients on wiremock servers) end in the same number of attempts and the
//! same kind of error, with no token in the message. The rule lives in `imagebump-http`.

use std::time::Duration;

use imagebump::config::RegistryConfig;
use imagebump::forge::gitea::{Gitea, GiteaSettings};
use imagebump::forge::gitlab::{GitLab, GitLabAuth, GitLabSettings};
use imagebump::forge::{Forge, GitHub, GitHubAuth, GitHubSettings};
use imagebump::registry::credentials::Environment;
use imagebump::registry::name::parse_name;
use imagebump::registry::Registries;
use imagebump_http::{Options, RetryPolicy, Transport};
use secrecy::SecretString;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_FaultTableToken0123456789abcdef";

/// Short timeouts and backoff, the default attempts and budget.
fn options() -> Options {
    Options {
        timeout: Duration::from_millis(500),
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
async fn request(target: Target, uri: &str, post: bool) -> (Kind, String) {
    let forge_error = |e: imagebump::forge::Error| {
        use imagebump::forge::Error as E;
        let kind = match &e {
            E::RateLimited { .. } => Kind::RateLimited,
            E::Status { status, .. } if *status >= 500 => Kind::Server,
            E::Transport { message, .. } if message.contains("more than") => Kind::TooLarge,
            E::Transport { .. } => Kind::Transport,
            E::Unauthorized { .. } => Kind::Unauthorized,
            other => panic!("{target:?}: {other:?}"),
        };
        (kind, format!("{e} {e:?} {:?}", e.hint()))
    };
    let token = || SecretString::from(TOKEN.to_string());
    let transport = || Transport::new(options()).expect("transport");
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
        Target::Registry => return registry(uri).await,
    };
    let result = if post {
        forge.comment(1, "hello").await
    } else {
        forge.open_pulls("imagebump/").await.map(drop)
    };
    forge_error(result.expect_err("a fault"))
}

async fn registry(uri: &str) -> (Kind, String) {
    use imagebump::registry::Error as E;
    let config: RegistryConfig = serde_json::from_value(serde_json::json!({
        "prefix": "faults.test",
        "url": uri,
    }))
    .expect("config");
    let env = Environment::from_pairs(Vec::<(String, String)>::new());
    let registries = Registries::with_http(vec![config], env, options()).expect("registries");
    let image = parse_name("faults.test/team/app").expect("name");
    let client = registries.client_for(&image).expect("client");
    let e = client.list_tags("team/app").await.expect_err("a fault");
    let kind = match &e {
        E::RateLimited { .. } => Kind::RateLimited,
        E::Server { .. } => Kind::Server,
        E::Transport { .. } => Kind::Transport,
        E::TooLarge { .. } => Kind::TooLarge,
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
            attempts: 4,
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
        let (kind, text) = request(target, &server.uri(), fault.post).await;
        let attempts = server.received_requests().await.map_or(0, |r| r.len());
        assert_eq!(kind, fault.kind, "{target:?}, {}: {text}", fault.name);
        assert_eq!(
            attempts, fault.attempts,
            "{target:?}, {}: {text}",
            fault.name
        );
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
