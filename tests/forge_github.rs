//! The GitHub forge against the fake GitHub API (tests/support/github.rs): what it asks,
//! in which order, with which credentials, and what it makes of the answers.

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

mod support;

use std::time::{Duration, Instant};

use imagebump_forge::github::GitHub;
use imagebump_forge::{Error, Forge, GitHubAuth, GitHubSettings, Pull, PullState};
use secrecy::SecretString;
use serde_json::json;

use imagebump_forge::fake::new_pull;
use support::github::{Call, Credential, FakeGitHub, Fault, APP_PRIVATE_KEY};

const PREFIX: &str = "imagebump/";

fn token_settings(fake: &FakeGitHub, token: &str) -> GitHubSettings {
    support::isolate_process_env();
    GitHubSettings {
        api_url: fake.api_url(),
        owner: FakeGitHub::OWNER.to_string(),
        repo: FakeGitHub::REPO.to_string(),
        auth: GitHubAuth::Token(SecretString::from(token.to_string())),
    }
}

async fn connect(fake: &FakeGitHub) -> GitHub {
    GitHub::connect(token_settings(fake, FakeGitHub::TOKEN))
        .await
        .expect("connect with a token")
}

fn lines(calls: &[Call]) -> Vec<String> {
    calls.iter().map(Call::line).collect()
}

fn token() -> Credential {
    Credential::Token(FakeGitHub::TOKEN.to_string())
}

#[tokio::test]
async fn create_then_find_open_by_prefix_ignoring_forks_and_other_branches() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    assert_eq!(forge.name(), "GitHub");
    // A fork's pull request from a branch of the same name, and a human's branch.
    fake.add_fork_pull("mallory", "imagebump/apps-web", "main", "not ours");
    fake.add_pull("feature/login", "main", "Login page", "");
    assert!(
        fake.calls().is_empty(),
        "a token connects without a request"
    );

    let created = forge
        .create_pull(&new_pull(
            "imagebump/apps-web",
            "Update web to 1.2.3",
            "table\n<!-- imagebump: {} -->",
        ))
        .await
        .expect("create");
    assert_eq!(
        created,
        Pull {
            number: 3,
            branch: "imagebump/apps-web".to_string(),
            base: "main".to_string(),
            author: support::github::BOT_LOGIN.to_string(),
            title: "Update web to 1.2.3".to_string(),
            body: "table\n<!-- imagebump: {} -->".to_string(),
            state: PullState::Open,
            url: "https://github.com/octo/gitops/pull/3".to_string(),
            labels: vec![],
            assignees: vec![],
            review_requests: vec![],
            draft: false,
            node_id: "PR_fake3".to_string(),
            automerge: Some(false),
        }
    );

    let open = forge.open_pulls(PREFIX).await.expect("open pulls");
    assert_eq!(open, vec![created.clone()]);
    // A prefix that matches nothing.
    assert!(forge.open_pulls("renovate/").await.unwrap().is_empty());

    let calls = fake.calls();
    assert_eq!(
        lines(&calls),
        [
            "POST /repos/octo/gitops/pulls",
            "GET /repos/octo/gitops/pulls",
            "GET /repos/octo/gitops/pulls",
        ]
    );
    assert_eq!(
        calls[0].body,
        Some(json!({
            "title": "Update web to 1.2.3",
            "head": "imagebump/apps-web",
            "base": "main",
            "body": "table\n<!-- imagebump: {} -->",
        }))
    );
    assert_eq!(calls[0].status, 201);
    assert_eq!(
        calls[1].query,
        [
            ("state".to_string(), "open".to_string()),
            ("per_page".to_string(), "100".to_string())
        ]
    );
    assert!(calls.iter().all(|c| c.credential == token()));
}

#[tokio::test]
async fn draft_and_duplicate_create() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    let mut new = new_pull("imagebump/api", "Update api", "body");
    new.draft = true;
    let created = forge.create_pull(&new).await.unwrap();
    assert!(created.draft);
    assert_eq!(fake.calls()[0].body.as_ref().unwrap()["draft"], json!(true));

    // GitHub refuses a second open pull request for the same head and base.
    let error = forge.create_pull(&new).await.unwrap_err();
    match &error {
        Error::Status { status, message } => {
            assert_eq!(*status, 422);
            assert_eq!(
                message,
                "Validation Failed: A pull request already exists for octo:imagebump/api."
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!error.is_retryable());
    assert_eq!(fake.pulls().len(), 1);
}

#[tokio::test]
async fn update_close_comment_labels_reviewers_assignees() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    let number = fake.add_pull("imagebump/apps-web", "main", "Old title", "old body");

    forge
        .update_pull(number, "New title", "new body")
        .await
        .unwrap();
    forge.comment(number, "Superseded by 1.2.4").await.unwrap();
    forge
        .add_labels(
            number,
            &["dependencies".to_string(), "imagebump".to_string()],
        )
        .await
        .unwrap();
    forge
        .request_reviewers(
            number,
            &[
                "alice".to_string(),
                "@bob".to_string(),
                "@octo/platform".to_string(),
            ],
        )
        .await
        .unwrap();
    forge
        .add_assignees(number, &["@carol".to_string()])
        .await
        .unwrap();
    // Empty lists make no request.
    forge.add_labels(number, &[]).await.unwrap();
    forge.request_reviewers(number, &[]).await.unwrap();
    forge.add_assignees(number, &[]).await.unwrap();
    forge.close_pull(number).await.unwrap();

    let writes: Vec<(String, Option<serde_json::Value>)> = fake
        .write_calls()
        .into_iter()
        .map(|c| (c.line(), c.body))
        .collect();
    let path = |rest: &str| fake.repo_path(rest);
    assert_eq!(
        writes,
        [
            (
                format!("PATCH {}", path("/pulls/1")),
                Some(json!({"title": "New title", "body": "new body"}))
            ),
            (
                format!("POST {}", path("/issues/1/comments")),
                Some(json!({"body": "Superseded by 1.2.4"}))
            ),
            (
                format!("POST {}", path("/issues/1/labels")),
                Some(json!({"labels": ["dependencies", "imagebump"]}))
            ),
            (
                format!("POST {}", path("/pulls/1/requested_reviewers")),
                Some(json!({"reviewers": ["alice", "bob"], "team_reviewers": ["platform"]}))
            ),
            (
                format!("POST {}", path("/issues/1/assignees")),
                Some(json!({"assignees": ["carol"]}))
            ),
            (
                format!("PATCH {}", path("/pulls/1")),
                Some(json!({"state": "closed"}))
            ),
        ]
    );
    assert_eq!(fake.calls().len(), 6, "no GET either");

    let pull = fake.pull(number);
    assert_eq!(pull.title, "New title");
    assert_eq!(pull.body.as_deref(), Some("new body"));
    assert_eq!(pull.state, "closed");
    assert!(!pull.merged);
    assert_eq!(pull.comments, ["Superseded by 1.2.4"]);
    assert_eq!(pull.labels, ["dependencies", "imagebump"]);
    assert_eq!(pull.reviewers, ["alice", "bob"]);
    assert_eq!(pull.team_reviewers, ["platform"]);
    assert_eq!(pull.assignees, ["carol"]);

    // A closed pull request is no longer open.
    assert!(forge.open_pulls(PREFIX).await.unwrap().is_empty());
}

#[tokio::test]
async fn missing_pull_is_not_found() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    let error = forge.comment(99, "hello").await.unwrap_err();
    match &error {
        Error::NotFound { what } => assert_eq!(what, "pull request #99 in octo/gitops"),
        other => panic!("{other:?}"),
    }
    assert!(error.hint().is_some());
}

#[tokio::test]
async fn closed_pulls_newest_first_with_bodies_and_state() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    let merged = fake.add_pull("imagebump/a", "main", "A", "<!-- imagebump: a -->");
    let rejected = fake.add_pull("imagebump/b", "main", "B", "<!-- imagebump: b -->");
    let still_open = fake.add_pull("imagebump/c", "main", "C", "c");
    let human = fake.add_pull("feature/x", "main", "X", "x");
    let fork = fake.add_fork_pull("mallory", "imagebump/a", "main", "fork");
    let old = fake.add_pull("imagebump/d", "main", "D", "");
    // Order of events: old closed first, then the fork's, the human's, rejected, merged.
    fake.close(old);
    fake.close(fork);
    fake.merge(human);
    fake.close(rejected);
    fake.merge(merged);
    // A human edits a body after closing: it moves to the front and GitHub may send `null`.
    fake.set_body(old, None);

    let closed = forge.closed_pulls(PREFIX, 10).await.unwrap();
    let summary: Vec<(u64, PullState, &str)> = closed
        .iter()
        .map(|p| (p.number, p.state, p.body.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (old, PullState::Closed, ""),
            (merged, PullState::Merged, "<!-- imagebump: a -->"),
            (rejected, PullState::Closed, "<!-- imagebump: b -->"),
        ]
    );
    assert!(closed.iter().all(|p| p.number != still_open));

    let two = forge.closed_pulls(PREFIX, 2).await.unwrap();
    assert_eq!(
        two.iter().map(|p| p.number).collect::<Vec<_>>(),
        [old, merged]
    );
    assert!(forge.closed_pulls(PREFIX, 0).await.unwrap().is_empty());

    let calls = fake.calls();
    assert_eq!(calls.len(), 2, "limit 0 asks nothing: {:?}", lines(&calls));
    assert_eq!(
        calls[0].query,
        [
            ("state", "closed"),
            ("sort", "updated"),
            ("direction", "desc"),
            ("per_page", "100"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
}

#[tokio::test]
async fn pagination_follows_link_headers() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    for i in 0..230 {
        fake.add_pull(&format!("imagebump/app-{i:03}"), "main", "t", "b");
    }
    for i in 0..5 {
        fake.add_pull(&format!("other/{i}"), "main", "t", "b");
    }
    let open = forge.open_pulls(PREFIX).await.unwrap();
    assert_eq!(open.len(), 230);
    // Newest first, as GitHub sorts by default; every pull request once.
    let mut numbers: Vec<u64> = open.iter().map(|p| p.number).collect();
    assert_eq!(numbers.first(), Some(&230));
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(numbers.len(), 230);

    let calls = fake.calls();
    assert_eq!(calls.len(), 3);
    let pages: Vec<Option<&str>> = calls.iter().map(|c| c.query_value("page")).collect();
    assert_eq!(pages, [None, Some("2"), Some("3")]);
    assert!(calls
        .iter()
        .all(|c| c.query_value("per_page") == Some("100")
            && c.query_value("state") == Some("open")
            && c.credential == token()));

    // Closed: stops as soon as the limit is reached.
    for number in 1..=150 {
        fake.close(number);
    }
    fake.clear_calls();
    let closed = forge.closed_pulls(PREFIX, 20).await.unwrap();
    assert_eq!(closed.len(), 20);
    assert_eq!(closed[0].number, 150);
    assert_eq!(fake.calls().len(), 1);
    let all_closed = forge.closed_pulls(PREFIX, 1000).await.unwrap();
    assert_eq!(all_closed.len(), 150);
    assert_eq!(fake.calls().len(), 3);
}

#[tokio::test]
async fn primary_rate_limit_waits_for_the_reset_then_succeeds() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    fake.add_pull("imagebump/a", "main", "A", "");
    let route = "/repos/octo/gitops/pulls";
    fake.fail_next("GET", route, 1, Fault::RateLimit { reset_in: 1 });

    let started = Instant::now();
    let open = forge.open_pulls(PREFIX).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(open.len(), 1);
    assert!(waited >= Duration::from_millis(900), "waited {waited:?}");
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    let statuses: Vec<(String, u16)> = fake.calls().iter().map(|c| (c.line(), c.status)).collect();
    assert_eq!(
        statuses,
        [(format!("GET {route}"), 403), (format!("GET {route}"), 200)]
    );
}

#[tokio::test]
async fn long_rate_limit_is_reported_not_slept() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    fake.fail_next(
        "GET",
        "/repos/octo/gitops/pulls",
        1,
        Fault::RateLimit { reset_in: 3000 },
    );
    let started = Instant::now();
    let error = forge.open_pulls(PREFIX).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    match &error {
        Error::RateLimited {
            retry_after: Some(wait),
        } => assert!(
            *wait > Duration::from_secs(2990) && *wait <= Duration::from_secs(3000),
            "{wait:?}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(error.is_retryable());
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn secondary_rate_limit_on_a_post_is_retried_once_it_lifts() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    let number = fake.add_pull("imagebump/a", "main", "A", "");
    let route = "/repos/octo/gitops/issues/1/comments";
    fake.fail_next(
        "POST",
        route,
        1,
        Fault::SecondaryRateLimit { retry_after: 1 },
    );
    forge.comment(number, "hello").await.unwrap();
    let statuses: Vec<u16> = fake.calls().iter().map(|c| c.status).collect();
    assert_eq!(statuses, [403, 201]);
    // GitHub rejected the first one: exactly one comment exists.
    assert_eq!(fake.pull(number).comments, ["hello"]);

    // 429 with retry-after, on a GET.
    fake.fail_next(
        "GET",
        "/repos/octo/gitops/pulls",
        1,
        Fault::TooManyRequests { retry_after: 1 },
    );
    assert_eq!(forge.open_pulls(PREFIX).await.unwrap().len(), 1);
}

#[tokio::test]
async fn server_error_on_create_is_not_retried() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    let route = "/repos/octo/gitops/pulls";
    fake.fail_next("POST", route, 1, Fault::Status(500));
    let error = forge
        .create_pull(&new_pull("imagebump/a", "A", "body"))
        .await
        .unwrap_err();
    match &error {
        Error::Status { status, message } => {
            assert_eq!(*status, 500);
            assert_eq!(message, "Internal Server Error");
        }
        other => panic!("{other:?}"),
    }
    assert!(error.is_retryable());
    assert_eq!(
        fake.calls()
            .iter()
            .map(|c| (c.line(), c.status))
            .collect::<Vec<_>>(),
        [(format!("POST {route}"), 500)]
    );
    assert!(fake.pulls().is_empty(), "no pull request was created");
}

#[tokio::test]
async fn server_errors_on_reads_and_patches_are_retried() {
    let fake = FakeGitHub::start().await;
    let forge = connect(&fake).await;
    let number = fake.add_pull("imagebump/a", "main", "A", "");
    fake.fail_next("GET", "/repos/octo/gitops/pulls", 2, Fault::Status(502));
    assert_eq!(forge.open_pulls(PREFIX).await.unwrap().len(), 1);
    fake.fail_next("PATCH", "/repos/octo/gitops/pulls/1", 1, Fault::Status(503));
    forge.update_pull(number, "T", "B").await.unwrap();
    let statuses: Vec<(String, u16)> = fake
        .calls()
        .iter()
        .map(|c| (c.method.clone(), c.status))
        .collect();
    let expected: Vec<(String, u16)> = [
        ("GET", 502),
        ("GET", 502),
        ("GET", 200),
        ("PATCH", 503),
        ("PATCH", 200),
    ]
    .iter()
    .map(|(m, s)| (m.to_string(), *s))
    .collect();
    assert_eq!(statuses, expected);

    // Retries are bounded: a server that keeps failing is reported.
    fake.clear_calls();
    fake.fail_next("GET", "/repos/octo/gitops/pulls", 10, Fault::Status(502));
    let error = forge.open_pulls(PREFIX).await.unwrap_err();
    assert!(
        matches!(error, Error::Status { status: 502, .. }),
        "{error:?}"
    );
    assert_eq!(fake.calls().len(), 4, "one try and three retries");
}

#[tokio::test]
async fn bad_token_is_unauthorized_with_a_hint_and_no_secret() {
    let fake = FakeGitHub::start().await;
    let secret = "ghp_thisIsNotAValidTokenButLooksLikeOne01";
    let forge = GitHub::connect(token_settings(&fake, secret))
        .await
        .unwrap();
    let error = forge.open_pulls(PREFIX).await.unwrap_err();
    assert!(matches!(error, Error::Unauthorized { .. }), "{error:?}");
    assert_eq!(
        error.hint().as_deref(),
        Some("set GITHUB_TOKEN or IMAGEBUMP_FORGE_TOKEN (needs contents: write, pull-requests: write)")
    );
    assert!(!error.is_retryable());
    let shown = format!("{error} {error:?} {:?} {forge:?}", error.hint());
    assert!(!shown.contains(secret), "{shown}");
    // The token was sent (and refused) exactly once.
    let calls = fake.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].credential, Credential::Token(secret.to_string()));
    assert_eq!(calls[0].status, 401);
}

#[tokio::test]
async fn token_with_a_trailing_newline_is_trimmed_and_bad_tokens_refused() {
    let fake = FakeGitHub::start().await;
    let forge = GitHub::connect(token_settings(&fake, &format!("{}\n", FakeGitHub::TOKEN)))
        .await
        .unwrap();
    forge.open_pulls(PREFIX).await.unwrap();
    assert_eq!(fake.calls()[0].credential, token());

    let spaced = GitHub::connect(token_settings(&fake, "ghp_a b"))
        .await
        .unwrap_err();
    assert!(matches!(spaced, Error::Config(_)), "{spaced:?}");
    assert!(!spaced.to_string().contains("ghp_a"), "{spaced}");
    let empty = GitHub::connect(token_settings(&fake, "  "))
        .await
        .unwrap_err();
    assert!(matches!(empty, Error::Unauthorized { .. }), "{empty:?}");
}

#[tokio::test]
async fn bad_settings_are_config_errors() {
    let fake = FakeGitHub::start().await;
    let mut settings = token_settings(&fake, FakeGitHub::TOKEN);
    settings.api_url = "ftp://example.com".to_string();
    assert!(matches!(
        GitHub::connect(settings).await,
        Err(Error::Config(_))
    ));
    let mut settings = token_settings(&fake, FakeGitHub::TOKEN);
    settings.repo = "git ops".to_string();
    assert!(matches!(
        GitHub::connect(settings).await,
        Err(Error::Config(_))
    ));
    support::isolate_process_env();
    let settings = GitHubSettings {
        api_url: fake.api_url(),
        owner: FakeGitHub::OWNER.to_string(),
        repo: FakeGitHub::REPO.to_string(),
        auth: GitHubAuth::App {
            app_id: 1,
            private_key_pem: SecretString::from("not a key".to_string()),
        },
    };
    let error = GitHub::connect(settings).await.unwrap_err();
    assert!(matches!(error, Error::Config(_)), "{error:?}");
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn unreachable_api_is_a_retryable_transport_error() {
    // A port nothing listens on: bind, note it, release it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    support::isolate_process_env();
    let settings = GitHubSettings {
        api_url: format!("http://127.0.0.1:{port}"),
        owner: "octo".to_string(),
        repo: "gitops".to_string(),
        auth: GitHubAuth::Token(SecretString::from(FakeGitHub::TOKEN.to_string())),
    };
    let forge = GitHub::connect(settings).await.unwrap();
    // A POST is not retried, so this returns at once.
    let error = forge.comment(1, "x").await.unwrap_err();
    match &error {
        Error::Transport { message, retryable } => {
            assert!(*retryable);
            assert!(message.starts_with("cannot reach GitHub"), "{message}");
            assert!(!message.contains(FakeGitHub::TOKEN), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

fn app_settings(fake: &FakeGitHub, app_id: u64) -> GitHubSettings {
    support::isolate_process_env();
    GitHubSettings {
        api_url: fake.api_url(),
        owner: FakeGitHub::OWNER.to_string(),
        repo: FakeGitHub::REPO.to_string(),
        auth: GitHubAuth::App {
            app_id,
            private_key_pem: SecretString::from(APP_PRIVATE_KEY.to_string()),
        },
    }
}

#[tokio::test]
async fn github_app_exchanges_a_jwt_for_an_installation_token() {
    let fake = FakeGitHub::start().await;
    fake.enable_app(4242, 77);
    let forge = GitHub::connect(app_settings(&fake, 4242)).await.unwrap();
    let issued = fake.issued_tokens();
    assert_eq!(issued.len(), 1);
    let installation = Credential::Token(issued[0].clone());

    let created = forge
        .create_pull(&new_pull("imagebump/a", "A", "body"))
        .await
        .unwrap();
    forge
        .add_labels(created.number, &["imagebump".to_string()])
        .await
        .unwrap();
    assert_eq!(
        forge.open_pulls(PREFIX).await.unwrap(),
        vec![Pull {
            labels: vec!["imagebump".to_string()],
            ..created
        }]
    );

    let calls = fake.calls();
    assert_eq!(
        lines(&calls),
        [
            "GET /repos/octo/gitops/installation",
            "POST /app/installations/77/access_tokens",
            "POST /repos/octo/gitops/pulls",
            "POST /repos/octo/gitops/issues/1/labels",
            "GET /repos/octo/gitops/pulls",
        ]
    );
    let jwt = Credential::Jwt {
        app_id: "4242".to_string(),
    };
    assert_eq!(calls[0].credential, jwt);
    assert_eq!(calls[1].credential, jwt);
    // The token is scoped to the one repository.
    assert_eq!(calls[1].body, Some(json!({"repositories": ["gitops"]})));
    assert!(calls[2..].iter().all(|c| c.credential == installation));
    assert!(calls.iter().all(|c| c.status < 300));

    // The same token serves `git push`; nothing is asked for it while it is fresh.
    let git = forge.git_token().await.unwrap();
    assert_eq!(secrecy::ExposeSecret::expose_secret(&git), issued[0]);
    assert_eq!(fake.calls().len(), calls.len());
    assert!(!format!("{forge:?}").contains(&issued[0]));
}

#[tokio::test]
async fn github_app_not_installed_or_wrong_id() {
    let fake = FakeGitHub::start().await;
    fake.enable_app(4242, 77);
    fake.uninstall_app();
    // Not installed on the repository: the installation lookup answers 404.
    let error = GitHub::connect(app_settings(&fake, 4242))
        .await
        .unwrap_err();
    match &error {
        Error::NotFound { what } => assert!(what.contains("install the app"), "{what}"),
        other => panic!("{other:?}"),
    }
    // Another app's id: the JWT is refused.
    fake.enable_app(4242, 77);
    let error = GitHub::connect(app_settings(&fake, 999)).await.unwrap_err();
    match &error {
        Error::Unauthorized { hint } => assert!(hint.contains("999"), "{hint}"),
        other => panic!("{other:?}"),
    }
    assert!(fake.issued_tokens().is_empty());
}

#[tokio::test]
async fn enterprise_base_url_with_a_path_prefix() {
    let fake = FakeGitHub::start_with_prefix("/api/v3").await;
    assert!(fake.api_url().ends_with("/api/v3"));
    fake.enable_app(7, 8);
    for i in 0..120 {
        fake.add_pull(&format!("imagebump/app-{i}"), "main", "t", "b");
    }
    // An App on GHE: the token exchange and the pages after the first (followed from `Link`
    // URLs) carry the installation token too.
    let forge = GitHub::connect(app_settings(&fake, 7)).await.unwrap();
    assert_eq!(forge.open_pulls(PREFIX).await.unwrap().len(), 120);
    let number = forge
        .create_pull(&new_pull("imagebump/new", "N", "b"))
        .await
        .unwrap()
        .number;
    forge.close_pull(number).await.unwrap();

    let calls = fake.calls();
    assert_eq!(
        lines(&calls),
        [
            "GET /api/v3/repos/octo/gitops/installation",
            "POST /api/v3/app/installations/8/access_tokens",
            "GET /api/v3/repos/octo/gitops/pulls",
            "GET /api/v3/repos/octo/gitops/pulls",
            "POST /api/v3/repos/octo/gitops/pulls",
            "PATCH /api/v3/repos/octo/gitops/pulls/121",
        ]
    );
    assert_eq!(calls[3].query_value("page"), Some("2"));
    let installation = Credential::Token(fake.issued_tokens()[0].clone());
    assert!(calls[2..]
        .iter()
        .all(|c| c.credential == installation && c.status < 300));

    // A token on GHE, with a trailing slash on the URL.
    let mut settings = token_settings(&fake, FakeGitHub::TOKEN);
    settings.api_url = format!("{}/", fake.api_url());
    let forge = GitHub::connect(settings).await.unwrap();
    fake.clear_calls();
    assert_eq!(forge.open_pulls(PREFIX).await.unwrap().len(), 120);
    assert_eq!(
        lines(&fake.calls()),
        [
            "GET /api/v3/repos/octo/gitops/pulls",
            "GET /api/v3/repos/octo/gitops/pulls"
        ]
    );
}

#[tokio::test]
async fn forge_is_usable_as_a_trait_object() {
    let fake = FakeGitHub::start().await;
    let forge: Box<dyn Forge> = Box::new(connect(&fake).await);
    forge
        .create_pull(&new_pull("imagebump/a", "A", "b"))
        .await
        .unwrap();
    assert_eq!(forge.open_pulls(PREFIX).await.unwrap().len(), 1);
}
