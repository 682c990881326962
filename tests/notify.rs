//! Notifications (`notify:`, docs/configuration.md): a pull-request run against the GitHub
//! fake and a real git remote tells a local webhook receiver and a Slack-shaped receiver
//! what it opened; the body and its HMAC are checked, the Slack message against Block
//! Kit's documented shape; a rerun that changes nothing sends nothing; a 500 is retried;
//! a receiver that is down leaves the exit code alone; the repository may not set `notify`.

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

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use support::cli::{imagebump, Run};
use support::github::FakeGitHub;
use support::mock::received;
use support::TwoApps;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = FakeGitHub::TOKEN;
const SECRET: &str = "hook-secret-4d1f";

async fn receiver() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    server
}

async fn run(apps: &TwoApps, forge: &FakeGitHub, env: &[(&str, &str)], code: i32) -> Run {
    imagebump()
        .arg("run")
        .arg(apps.server.url())
        .arg("--config")
        .arg(apps.config())
        .args(["--forge", "github", "--forge-url"])
        .arg(forge.api_url())
        .arg("--forge-repo")
        .arg(format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO))
        .args(["--output", "json"])
        .env("GITHUB_TOKEN", TOKEN)
        .envs(env.iter().copied())
        .code(code)
        .run_async()
        .await
}

fn hmac_hex(body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Block Kit as Slack documents it for incoming webhooks: `text`, at most 50 blocks, each a
/// `section` with mrkdwn `text` of at most 3000 characters or a `context` of at most 10
/// mrkdwn elements.
fn assert_block_kit(message: &Value) {
    assert!(message["text"].as_str().is_some_and(|t| !t.is_empty()));
    let blocks = message["blocks"].as_array().expect("blocks");
    assert!(!blocks.is_empty() && blocks.len() <= 50, "{message}");
    for b in blocks {
        match b["type"].as_str() {
            Some("section") => {
                assert_eq!(b["text"]["type"], "mrkdwn", "{b}");
                let text = b["text"]["text"].as_str().unwrap();
                assert!(!text.is_empty() && text.chars().count() <= 3000, "{b}");
                assert_eq!(b.as_object().unwrap().len(), 2, "only type and text: {b}");
            }
            Some("context") => {
                let elements = b["elements"].as_array().unwrap();
                assert!(!elements.is_empty() && elements.len() <= 10, "{b}");
                for e in elements {
                    assert_eq!(e["type"], "mrkdwn", "{b}");
                    assert!(e["text"].as_str().unwrap().chars().count() <= 3000);
                }
            }
            other => panic!("block type {other:?}: {b}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn opened_pull_requests_are_told_once_signed_and_in_block_kit() {
    let hook = receiver().await;
    let slack = receiver().await;
    let config = format!(
        "notify:\n  - webhook: {}/imagebump\n    secret: env:HOOK_SECRET\n    on: [opened, updated, closed, pushed, failed]\n  - slack: env:SLACK_URL\n    on: [opened, failed]\n",
        hook.uri()
    );
    let apps = TwoApps::start(TOKEN, &config);
    let forge = FakeGitHub::start().await;
    let slack_url = format!("{}/services/T000/B000/slack-secret-path", slack.uri());
    let env = [("HOOK_SECRET", SECRET), ("SLACK_URL", slack_url.as_str())];
    let first = run(&apps, &forge, &env, 0).await;

    let hooks = received(&hook).await;
    assert_eq!(hooks.len(), 1, "one notification for the run");
    let req = &hooks[0];
    assert_eq!(req.url.path(), "/imagebump");
    let signature = req
        .headers
        .get("x-imagebump-signature")
        .unwrap()
        .to_str()
        .unwrap();
    assert_eq!(signature, format!("sha256={}", hmac_hex(&req.body)));
    assert_eq!(req.headers.get("x-imagebump-event").unwrap(), "opened");
    let body: Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(body["version"], 1);
    assert_eq!(body["events"], serde_json::json!(["opened"]));
    assert_eq!(body["mode"], "pull-requests");
    assert_eq!(
        req.headers
            .get("x-imagebump-delivery")
            .unwrap()
            .to_str()
            .unwrap(),
        body["id"].as_str().unwrap()
    );
    let pulls = body["pullRequests"].as_array().unwrap();
    assert_eq!(pulls.len(), 2, "{body}");
    let web = pulls
        .iter()
        .find(|p| p["branch"] == "imagebump/apps-web")
        .unwrap();
    assert_eq!(web["event"], "opened");
    assert_eq!(web["title"], "Update registry.test/team/web to 1.1.0");
    assert!(web["number"].as_u64().is_some() && web["url"].as_str().is_some());
    assert_eq!(
        web["updates"],
        serde_json::json!([{"image": "registry.test/team/web", "from": "1.0.0", "to": "1.1.0",
            "file": "apps/web/kustomization.yaml", "line": 3}])
    );
    assert!(body.get("failed").is_none() && body.get("pushed").is_none());

    let slacks = received(&slack).await;
    assert_eq!(slacks.len(), 1);
    assert_eq!(
        slacks[0].url.path(),
        "/services/T000/B000/slack-secret-path"
    );
    let message: Value = serde_json::from_slice(&slacks[0].body).unwrap();
    assert_block_kit(&message);
    assert!(
        message["text"]
            .as_str()
            .unwrap()
            .starts_with("imagebump: 2 pull requests opened in "),
        "{message}"
    );
    // The report says what was sent; no secret anywhere in the output.
    let report = first.json();
    assert_eq!(report["notifications"][0]["target"], "webhook notify[0]");
    assert_eq!(report["notifications"][0]["delivered"], true);
    assert_eq!(report["notifications"][1]["target"], "slack notify[1]");
    for text in [&first.stdout, &first.stderr] {
        assert!(!text.contains(SECRET) && !text.contains("slack-secret-path"));
    }

    // A rerun that changes nothing sends nothing.
    let again = run(&apps, &forge, &env, 0).await;
    assert_eq!(received(&hook).await.len(), 1, "{}", again.stdout);
    assert_eq!(received(&slack).await.len(), 1);
    assert!(again.json().get("notifications").is_none());

    // A newer version updates one pull request: the webhook hears it, Slack (opened and
    // failed only) does not.
    apps.reg.push_tags("team/web", &["1.2.0"]);
    run(&apps, &forge, &env, 0).await;
    let hooks = received(&hook).await;
    assert_eq!(hooks.len(), 2);
    let body: Value = serde_json::from_slice(&hooks[1].body).unwrap();
    assert_eq!(body["events"], serde_json::json!(["updated"]));
    assert_eq!(received(&slack).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_500_is_retried_with_the_same_delivery_and_a_dead_receiver_is_a_warning() {
    let hook = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/flaky"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&hook)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&hook)
        .await;
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = format!(
        "notify:\n  - webhook: {}/flaky\n  - webhook: http://127.0.0.1:{dead}/gone\n",
        hook.uri()
    );
    let apps = TwoApps::start(TOKEN, &config);
    let forge = FakeGitHub::start().await;
    // The run's work is done: exit 0, whatever the receivers did.
    let done = run(&apps, &forge, &[], 0).await;

    let hooks = received(&hook).await;
    assert_eq!(hooks.len(), 2, "the 500, then the retry");
    assert_eq!(hooks[0].body, hooks[1].body, "the same delivery");
    assert!(
        hooks[0].headers.get("x-imagebump-signature").is_none(),
        "no secret, no signature"
    );
    let report = done.json();
    let sent = report["notifications"].as_array().unwrap();
    assert_eq!(sent[0]["delivered"], true);
    assert_eq!(sent[0]["attempts"], 2);
    assert_eq!(sent[1]["delivered"], false);
    assert_eq!(sent[1]["attempts"], 4, "{}", sent[1]);
    done.assert_stderr_contains(
        "warning: webhook notify[1]: opened not delivered after 4 attempt(s)",
    );
    assert_eq!(
        forge.pulls().len(),
        2,
        "the pull requests were opened all the same"
    );
}

#[test]
fn the_repository_may_not_set_notify() {
    let tree = support::tree(&[(
        "imagebump.yaml",
        "notify:\n  - webhook: https://hooks.example.com/x\n",
    )]);
    let run = imagebump()
        .args(["config", "check"])
        .arg(tree.path())
        .code(2)
        .run();
    run.assert_stderr_contains("notify can only be set in the operator's configuration");
}

#[test]
fn a_notify_entry_names_one_receiver_and_keeps_its_secret_out_of_the_file() {
    let cfg = support::tree(&[(
        "op.yaml",
        "notify:\n  - webhook: https://hooks.example.com/x\n    secret: plain-text-key\n",
    )]);
    let run = imagebump()
        .args(["config", "check", "--config"])
        .arg(cfg.path().join("op.yaml"))
        .arg(cfg.path())
        .code(2)
        .run();
    run.assert_stderr_contains(
        "notify[0].secret: the signing key is given as env:VAR or file:PATH",
    );
    assert!(!run.stderr.contains("plain-text-key"));
}
