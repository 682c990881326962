//! The HTML fleet view (docs/report.md, "HTML view"): `run --report-html FILE` and
//! `promotions --output html` on a scripted git history, opened in a real headless
//! Chromium: the DOM (one row per application, one column per environment, each cell's
//! state), screenshots at desktop and phone widths, nothing wider than the window, hostile
//! names inert, and a snapshot of the page.

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

use std::path::Path;

use support::browser;
use support::cli::imagebump;
use support::{git, git_command, Registry, RegistryMode};

/// An application named to break out of the page: markup, quotes, a right-to-left
/// override (a directory name; its `{app}` is the application).
const HOSTILE: &str = "<img src=x onerror=document.title='pwned'>\"q\u{202E}lmth";

/// "Now" for every command here: 2026-11-20 21:00 UTC.
const NOW: &str = "2026-11-20T21:00:00Z";

/// A commit of `files` in `dir`, committed (and authored) at `date`; its hash.
fn commit_at(dir: &Path, files: &[(&str, &str)], message: &str, date: &str) -> String {
    for (rel, text) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git(dir, &["add", "--all"]);
    dated(dir, &["commit", "--quiet", "-m", message], date);
    git(dir, &["rev-parse", "HEAD"])
}

/// `git <args>` in `dir` with author and committer dates `date`.
fn dated(dir: &Path, args: &[&str], date: &str) {
    let out = git_command()
        .current_dir(dir)
        .args(args)
        .env("GIT_COMMITTER_DATE", date)
        .env("GIT_AUTHOR_DATE", date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn kustomization(image: &str, tag: &str) -> String {
    format!("images:\n  - name: {image}\n    newTag: {tag}\n")
}

const RULES: &str = "images:
  - match: registry.test/team/tools
    pin: true
  - match: registry.test/team/jobs
    schedule: [\"* 6-9 * * 1-5\"]
  - match: registry.test/team/*
    path: apps/*/overlays/dev/**
  - match: registry.test/team/*
    path: apps/*/overlays/staging/**
    promoteFrom: {path: \"apps/{app}/overlays/dev\", soak: 2h}
  - match: registry.test/team/*
    path: apps/*/overlays/prod/**
    promoteFrom: {path: \"apps/{app}/overlays/staging\", soak: 24h}
pullRequests:
  author: {name: imagebump test, email: test@imagebump.invalid}
";

/// A fleet with every state a run tells, in a git checkout with a scripted history:
/// - web: dev 1.3.0 (1.4.0 in the registry: proposed), staging 1.1.0 (1.3.0 soaks in
///   dev), prod 1.0.0 (1.1.0 soaks in staging);
/// - api: dev 2.1.0; staging 2.0.0 after its imagebump commit to 2.1.0 was reverted (held
///   back); prod 2.0.0 (2.1.0 was reverted in staging: rejected);
/// - worker: dev 3.1.0 since 02:30 (soaked 2h: proposed for staging), prod 3.0.0;
/// - the hostile application: dev and staging at web 1.0.0;
/// - tools (pinned), jobs (outside its schedule: scheduled), cache (a registry that refuses connections: failing), redis
///   (`latest`: unmanaged) in dev only.
struct Fleet {
    _reg: Registry,
    work: tempfile::TempDir,
    cfg: tempfile::TempDir,
}

fn fleet() -> Fleet {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0"]);
    reg.push_tags("team/api", &["2.0.0", "2.1.0"]);
    reg.push_tags("team/worker", &["3.0.0", "3.1.0"]);
    reg.push_tags("team/tools", &["1.0.0", "1.1.0"]);
    reg.push_tags("team/jobs", &["1.0.0", "1.1.0"]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    git(dir, &["init", "--quiet", "-b", "main"]);
    let web = |env: &str| format!("apps/web/overlays/{env}/kustomization.yaml");
    let api = |env: &str| format!("apps/api/overlays/{env}/kustomization.yaml");
    let worker = |env: &str| format!("apps/worker/overlays/{env}/kustomization.yaml");
    let mut all: Vec<(String, String)> = Vec::new();
    for env in ["dev", "staging", "prod"] {
        all.push((web(env), kustomization("registry.test/team/web", "1.0.0")));
        all.push((api(env), kustomization("registry.test/team/api", "2.0.0")));
    }
    for env in ["dev", "staging", "prod"] {
        all.push((
            worker(env),
            kustomization("registry.test/team/worker", "3.0.0"),
        ));
    }
    all.push((
        "apps/jobs/overlays/dev/kustomization.yaml".into(),
        kustomization("registry.test/team/jobs", "1.0.0"),
    ));
    all.push((
        "apps/tools/overlays/dev/kustomization.yaml".into(),
        kustomization("registry.test/team/tools", "1.0.0"),
    ));
    all.push((
        "apps/cache/overlays/dev/kustomization.yaml".into(),
        kustomization("unreachable.test/team/cache", "1.0.0"),
    ));
    for env in ["dev", "staging"] {
        all.push((
            format!("apps/{HOSTILE}/overlays/{env}/kustomization.yaml"),
            kustomization("registry.test/team/web", "1.0.0"),
        ));
    }
    all.push((
        "apps/redis/overlays/dev/kustomization.yaml".into(),
        kustomization("registry.test/team/redis", "latest"),
    ));
    let all: Vec<(&str, &str)> = all.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    commit_at(dir, &all, "the fleet", "2026-11-18T00:00:00Z");
    let at = |file: String, image: &str, tag: &str, msg: &str, date: &str| {
        let text = kustomization(image, tag);
        commit_at(dir, &[(file.as_str(), text.as_str())], msg, date)
    };
    at(
        api("dev"),
        "registry.test/team/api",
        "2.1.0",
        "dev api 2.1.0",
        "2026-11-18T01:00:00Z",
    );
    let api_staging = at(
        api("staging"),
        "registry.test/team/api",
        "2.1.0",
        "Update registry.test/team/api to 2.1.0\n\nImagebump-Update: registry.test/team/api 2.0.0 -> 2.1.0 in apps/api/overlays/staging/kustomization.yaml",
        "2026-11-18T04:00:00Z",
    );
    dated(
        dir,
        &["revert", "--no-edit", &api_staging],
        "2026-11-19T12:00:00Z",
    );
    at(
        web("dev"),
        "registry.test/team/web",
        "1.1.0",
        "dev web 1.1.0",
        "2026-11-20T01:00:00Z",
    );
    at(
        worker("dev"),
        "registry.test/team/worker",
        "3.1.0",
        "dev worker 3.1.0",
        "2026-11-20T02:30:00Z",
    );
    at(
        web("staging"),
        "registry.test/team/web",
        "1.1.0",
        "staging web 1.1.0",
        "2026-11-20T05:00:00Z",
    );
    at(
        web("dev"),
        "registry.test/team/web",
        "1.3.0",
        "dev web 1.3.0",
        "2026-11-20T20:00:00Z",
    );
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("imagebump.yaml"),
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\n  - prefix: unreachable.test\n    url: http://127.0.0.1:9\n{RULES}",
            reg.base_url()
        ),
    )
    .unwrap();
    Fleet {
        _reg: reg,
        work,
        cfg,
    }
}

impl Fleet {
    fn config(&self) -> std::path::PathBuf {
        self.cfg.path().join("imagebump.yaml")
    }
}

/// Each row of the matrix in `dom`: the application and each environment's state.
fn matrix(dom: &str) -> Vec<(String, Vec<(String, String)>)> {
    let row = regex::Regex::new(r#"(?s)<tr data-app="([^"]*)"[^>]*>(.*?)</tr>"#).unwrap();
    let cell = regex::Regex::new(r#"<td data-env="([^"]*)" data-state="([^"]*)""#).unwrap();
    row.captures_iter(dom)
        .map(|r| {
            let cells = cell
                .captures_iter(&r[2])
                .map(|c| (c[1].to_string(), c[2].to_string()))
                .collect();
            (r[1].to_string(), cells)
        })
        .collect()
}

/// The columns of the matrix in `dom`.
fn columns(dom: &str) -> Vec<String> {
    let th = regex::Regex::new(r#"<th scope="col" data-env="([^"]*)""#).unwrap();
    th.captures_iter(dom).map(|c| c[1].to_string()).collect()
}

/// `rows` as `app: env=state …` lines.
fn lines(rows: &[(String, Vec<(String, String)>)]) -> Vec<String> {
    rows.iter()
        .map(|(app, cells)| {
            let cells: Vec<String> = cells.iter().map(|(e, s)| format!("{e}={s}")).collect();
            format!("{app}: {}", cells.join(" "))
        })
        .collect()
}

/// The escaped hostile name, as the page writes it (its override replaced).
const HOSTILE_ESCAPED: &str =
    "&lt;img src=x onerror=document.title=&#39;pwned&#39;&gt;&quot;q\\u{202e}lmth";

/// The same as the browser serialises it (attribute and text forms differ).
fn hostile_in_dom(dom: &str) -> bool {
    dom.contains(
        "<th scope=\"row\">&lt;img src=x onerror=document.title='pwned'&gt;\"q\\u{202e}lmth",
    )
}

#[test]
fn run_page_shows_every_state_in_a_real_browser() {
    let f = fleet();
    let out = tempfile::tempdir().unwrap();
    let page = out.path().join("fleet.html");
    imagebump()
        .args(["run", "--dry-run"])
        .arg(f.work.path())
        .arg("--config")
        .arg(f.config())
        .arg("--report-html")
        .arg(&page)
        .env("IMAGEBUMP_TEST_NOW", NOW)
        // The unreachable registry is an error.
        .code(1)
        .run();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(HOSTILE_ESCAPED), "{html}");
    assert!(!html.contains("<img") && !html.contains('\u{202E}'));
    let url = format!("file://{}", page.display());
    let dom = browser::dump_dom(&url);
    assert_eq!(columns(&dom), ["dev", "staging", "prod"]);
    assert_eq!(
        lines(&matrix(&dom)),
        [
            "&lt;img src=x onerror=document.title='pwned'&gt;&quot;q\\u{202e}lmth: dev=proposed staging=up-to-date prod=absent",
            "api: dev=up-to-date staging=proposed prod=rejected",
            "cache: dev=failing staging=absent prod=absent",
            "jobs: dev=scheduled staging=absent prod=absent",
            "redis: dev=unmanaged staging=absent prod=absent",
            "tools: dev=pinned staging=absent prod=absent",
            "web: dev=proposed staging=soaking prod=soaking",
            "worker: dev=up-to-date staging=proposed prod=up-to-date",
        ]
    );
    // The hostile name stayed text: no image element, the title is the page's own.
    assert!(hostile_in_dom(&dom), "{dom}");
    assert!(!dom.contains("<img"), "{dom}");
    assert!(dom.contains("<title>imagebump run: "), "{dom}");
    // The run's summary, drift said in words, the filter box shown by its script.
    for needle in [
        "<div data-count=\"updates\"><dt>updates</dt><dd>4</dd></div>",
        "<div data-count=\"failed\"><dt>failed</dt><dd>1</dd></div>",
        "<td>unreachable.test</td><td>connection</td>",
        "<h3>Errors (1)</h3>",
        "<span class=\"drift-label\">≠ drift: 2 versions</span>",
        "<span class=\"drift-mark\">≠ 1.3.0 in dev</span>",
        "<p class=\"filter\" id=\"filter-box\">",
    ] {
        assert!(dom.contains(needle), "{needle} not in\n{dom}");
    }
    check_in_browser(&page, 8);
    // The page's content (the stylesheet and script are the same on every page).
    let body = &html[html.find("<body>").unwrap()..html.find("<script>").unwrap()];
    insta::assert_snapshot!("run_page", filtered(body, f.work.path()));
}

/// The filter, the page without scripts, printing, screenshots, and the layout at both
/// widths.
fn check_in_browser(page: &Path, apps: usize) {
    let url = format!("file://{}", page.display());
    // The filter (`?q=` fills it in): only the matching row stays shown.
    let filtered = browser::dump_dom(&format!("{url}?q=worker"));
    let shown: Vec<&str> = filtered
        .split("<tr data-app=\"")
        .skip(1)
        .filter(|r| !r[..r.find('>').unwrap()].contains(" hidden"))
        .map(|r| &r[..r.find('"').unwrap()])
        .collect();
    assert_eq!(shown, ["worker"], "{filtered}");
    assert!(filtered.contains(&format!("1 of {apps}")), "{filtered}");
    // Scripting off: every row shown, the filter box (which needs the script) hidden.
    let plain = browser::in_frame(
        page,
        (1280, 800),
        false,
        "[].filter.call(d.querySelectorAll(\"#matrix tbody tr\"), function (r) { return r.offsetHeight > 0; }).length \
         + \" rows, filter box \" + (d.getElementById(\"filter-box\").offsetHeight > 0 ? \"shown\" : \"hidden\")",
    );
    assert_eq!(plain, format!("{apps} rows, filter box hidden"));
    // The Content-Security-Policy lets the page's own stylesheet apply.
    let styled = browser::in_frame(
        page,
        (1280, 800),
        true,
        "w.getComputedStyle(d.querySelector(\"#fleet .scroll\")).overflowX",
    );
    assert_eq!(styled, "auto");
    let shots = tempfile::tempdir().unwrap();
    browser::print_to_pdf(&url, &shots.path().join("page.pdf"));
    for size in [(1280, 800), (390, 844)] {
        let png = shots.path().join(format!("page-{}x{}.png", size.0, size.1));
        browser::screenshot(&url, size, &png);
        browser::assert_png(&png, size);
        let (scroll, inner) = browser::layout(page, size);
        assert_eq!(inner, size.0, "the frame is as wide as asked");
        assert!(
            scroll <= inner,
            "the page is {scroll}px wide in a {inner}px window"
        );
    }
}

/// The page with what changes from one run to the next replaced: the temporary tree's
/// path, commits, ports, request counts.
fn filtered(html: &str, tree: &Path) -> String {
    let tree = std::fs::canonicalize(tree).unwrap();
    let mut out = html.replace(&tree.display().to_string(), "[TREE]");
    for (pattern, with) in [
        (r"\b[0-9a-f]{40}\b", "[SHA]"),
        (r"<code>[0-9a-f]{7}</code>", "<code>[SHORT]</code>"),
        (r"\([0-9a-f]{7}\)", "([SHORT])"),
        (r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]"),
        (r#"<td class="n">\d+</td>"#, r#"<td class="n">[N]</td>"#),
        (r"retries \d+", "retries [N]"),
        (r"tag-list pages \d+", "tag-list pages [N]"),
    ] {
        out = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&out, with)
            .into_owned();
    }
    out
}

#[test]
fn promotions_page_shows_what_runs_where_in_a_real_browser() {
    let f = fleet();
    let run = imagebump()
        .args(["promotions"])
        .arg(f.work.path())
        .arg("--config")
        .arg(f.config())
        .args(["--output", "html"])
        .env("IMAGEBUMP_TEST_NOW", NOW)
        .run();
    let html = &run.stdout;
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(
        html.contains(HOSTILE_ESCAPED) && !html.contains("<img"),
        "{html}"
    );
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("promotions.html");
    std::fs::write(&page, html).unwrap();
    let dom = browser::dump_dom(&format!("file://{}", page.display()));
    assert_eq!(columns(&dom), ["dev", "staging", "prod"]);
    assert_eq!(
        lines(&matrix(&dom)),
        [
            "&lt;img src=x onerror=document.title='pwned'&gt;&quot;q\\u{202e}lmth: dev=follows staging=up-to-date prod=absent",
            "api: dev=follows staging=held-back prod=rejected",
            "web: dev=follows staging=soaking prod=soaking",
            "worker: dev=follows staging=ready prod=up-to-date",
        ]
    );
    assert!(!dom.contains("<img") && dom.contains("<title>imagebump promotions: "));
    // No run: no summary. The timeline: each version's arrival, newest first.
    assert!(!dom.contains("id=\"summary\""));
    let web = &dom[dom.find("<section data-app=\"web\">").unwrap()..];
    let web = &web[..web.find("</section>").unwrap()];
    let events: Vec<&str> = web
        .split("<li>")
        .skip(1)
        .map(|li| li.split(" <code>").next().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "<time datetime=\"2026-11-20T20:00:00Z\">2026-11-20 20:00</time> <span class=\"env\">dev</span> <span class=\"version\">1.3.0</span>",
            "<time datetime=\"2026-11-20T05:00:00Z\">2026-11-20 05:00</time> <span class=\"env\">staging</span> <span class=\"version\">1.1.0</span>",
            "<time datetime=\"2026-11-20T01:00:00Z\">2026-11-20 01:00</time> <span class=\"env\">dev</span> <span class=\"version\">1.1.0</span>",
            "<time datetime=\"2026-11-18T00:00:00Z\">2026-11-18 00:00</time> <span class=\"env\">staging</span> <span class=\"version\">1.0.0</span>",
            "<time datetime=\"2026-11-18T00:00:00Z\">2026-11-18 00:00</time> <span class=\"env\">prod</span> <span class=\"version\">1.0.0</span>",
            "<time datetime=\"2026-11-18T00:00:00Z\">2026-11-18 00:00</time> <span class=\"env\">dev</span> <span class=\"version\">1.0.0</span>",
        ],
        "{web}"
    );
    check_in_browser(&page, 4);
    // One input, one page: byte for byte.
    let again = imagebump()
        .args(["promotions"])
        .arg(f.work.path())
        .arg("--config")
        .arg(f.config())
        .args(["--output", "html"])
        .env("IMAGEBUMP_TEST_NOW", NOW)
        .run();
    assert_eq!(again.stdout, *html);
}

/// A pull-request run against a real git remote and the GitHub fake: each proposed update
/// links its pull request (the fake's `https://github.com/…` addresses), and the page names
/// the remote without credentials.
#[tokio::test(flavor = "multi_thread")]
async fn a_pull_request_run_links_each_proposed_update_to_its_pull_request() {
    use support::github::FakeGitHub;
    let apps = support::TwoApps::start(FakeGitHub::TOKEN, "");
    let forge = FakeGitHub::start().await;
    let out = tempfile::tempdir().unwrap();
    let page = out.path().join("fleet.html");
    imagebump()
        .arg("run")
        .arg(apps.server.url())
        .arg("--config")
        .arg(apps.config())
        .args(["--forge", "github", "--forge-url"])
        .arg(forge.api_url())
        .arg("--forge-repo")
        .arg(format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO))
        .arg("--report-html")
        .arg(&page)
        .env("GITHUB_TOKEN", FakeGitHub::TOKEN)
        .code(0)
        .run_async()
        .await;
    let html = std::fs::read_to_string(&page).unwrap();
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 2, "{pulls:?}");
    let built =
        regex::Regex::new(r#"<span class="detail">→ \d+\.1\.0 · built \d+d ago</span>"#).unwrap();
    for (app, branch) in [
        ("web", "imagebump/apps-web"),
        ("api", "imagebump/apps-api-values.yaml"),
    ] {
        let pull = pulls.iter().find(|p| p.branch == branch).unwrap();
        let row = &html[html.find(&format!("<tr data-app=\"{app}\"")).unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        let link = format!(
            "<a href=\"https://github.com/{}/{}/pull/{}\" rel=\"noopener noreferrer\">pull request</a>",
            FakeGitHub::OWNER,
            FakeGitHub::REPO,
            pull.number
        );
        assert!(
            row.contains("data-state=\"proposed\"") && row.contains(&link),
            "{row}"
        );
        // The proposed version's build age, from the pull request's facts.
        assert!(built.is_match(row), "{row}");
    }
    assert!(
        html.contains("mode <strong>pull-requests</strong>"),
        "{html}"
    );
    assert!(!html.contains(FakeGitHub::TOKEN));
}
