//! The git plumbing of pull-request mode against real git: a bare repository served over
//! smart HTTP (`git http-backend`) that requires a token, accepts pushes, and logs requests.

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

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use imagebump::source::git::{
    CommitInfo, Error, Git, NewCommit, PushOutcome, RefUpdate, Signature,
};
use secrecy::SecretString;
use support::{git, try_git, GitServer};

const TOKEN: &str = "ghs_PUSHTOKEN0123456789abcdef";
const RECEIVE_PACK_POST: &str = "POST /gitops.git/git-receive-pack ";
const RECEIVE_PACK_REFS: &str = "GET /gitops.git/info/refs?service=git-receive-pack ";

const WEB: &str = "apps/web/kustomization.yaml";
const API: &str = "apps/api/values.yaml";
const SCRIPT: &str = "scripts/render.sh";

fn git_without_token() -> Git {
    support::isolate_process_env();
    Git::new(None)
}

fn git_with(token: &str) -> Git {
    support::isolate_process_env();
    Git::new(Some(SecretString::from(token.to_string())))
}

fn bot() -> Signature {
    Signature {
        name: "imagebump[bot]".to_string(),
        email: "imagebump@users.noreply.example".to_string(),
    }
}

fn releaser() -> Signature {
    Signature {
        name: "Release Train".to_string(),
        email: "release@example.com".to_string(),
    }
}

/// A served repository on `main` with three files, the script executable.
fn serve() -> (tempfile::TempDir, GitServer) {
    support::isolate_process_env();
    let work = support::make_worktree(&[
        (
            WEB,
            "images:\n  - name: ghcr.io/acme/web\n    newTag: 1.2.0\n",
        ),
        (
            API,
            "image:\n  repository: ghcr.io/acme/api\n  tag: 2.0.0\n",
        ),
        (SCRIPT, "#!/bin/sh\nkustomize build \"$1\"\n"),
    ]);
    git(work.path(), &["update-index", "--chmod=+x", SCRIPT]);
    git(
        work.path(),
        &["commit", "--quiet", "-m", "make the script executable"],
    );
    let server = GitServer::http_with_token(work.path(), "gitops", TOKEN);
    (work, server)
}

/// A clone of the served `main` with `depth` commits, made with the right token.
fn clone(server: &GitServer, depth: usize) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    git_with(TOKEN)
        .clone_depth(&server.url(), Some("main"), &dir, depth)
        .unwrap();
    (tmp, dir)
}

fn files(list: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
    list.iter()
        .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
        .collect()
}

/// A bot commit on `parent` changing `path` to `content`.
fn bot_commit(dir: &Path, parent: &str, path: &str, content: &str, subject: &str) -> String {
    git_with(TOKEN)
        .commit_files(
            dir,
            parent,
            &files(&[(path, content)]),
            subject,
            &bot(),
            &bot(),
        )
        .unwrap()
}

fn update(branch: &str, new: &str, expected: Option<&str>) -> RefUpdate {
    RefUpdate {
        branch: branch.to_string(),
        new: new.to_string(),
        expected: expected.map(str::to_string),
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The outcome of a push that kept `accepted` and refused one branch for `why`.
fn one_refused(accepted: &[&str], branch: &str, why: &str) -> PushOutcome {
    PushOutcome {
        accepted: strings(accepted),
        rejected: vec![(branch.to_string(), why.to_string())],
    }
}

fn subjects(commits: &[CommitInfo]) -> Vec<&str> {
    commits.iter().map(|c| c.subject.as_str()).collect()
}

#[test]
fn commit_files_builds_a_commit_without_touching_the_checkout() {
    let (_work, server) = serve();
    let (_tmp, dir) = clone(&server, 1);
    let g = git_with(TOKEN);
    let head = g.head(&dir).unwrap();
    // A clone has no work tree (discovery reads the objects): this one is checked out.
    g.checkout(&dir, &head).unwrap();
    let index_before = fs::read(dir.join(".git/index")).unwrap();
    let disk_before: Vec<Vec<u8>> = [WEB, API, SCRIPT]
        .iter()
        .map(|p| fs::read(dir.join(p)).unwrap())
        .collect();

    let web = "images:\n  - name: ghcr.io/acme/web\n    newTag: 1.3.0\n";
    let script = "#!/bin/sh\r\nkustomize build \"$1\" --enable-helm\r\n";
    let created = "image:\n  tag: 0.1.0\n";
    let message = "Bump ghcr.io/acme/web to 1.3.0\n\
                   \n\
                   Updates the web image.\n\
                   \n\
                   Imagebump-Update: ghcr.io/acme/web 1.2.0 -> 1.3.0\n\
                   Imagebump-Group: apps/web\n";
    let new = g
        .commit_files(
            &dir,
            &head,
            &files(&[
                (WEB, web),
                (SCRIPT, script),
                ("apps/new/values.yaml", created),
            ]),
            message,
            &bot(),
            &releaser(),
        )
        .unwrap();

    // The checkout is as it was: index file byte for byte, files on disk, HEAD, status.
    assert_eq!(fs::read(dir.join(".git/index")).unwrap(), index_before);
    let disk_after: Vec<Vec<u8>> = [WEB, API, SCRIPT]
        .iter()
        .map(|p| fs::read(dir.join(p)).unwrap())
        .collect();
    assert_eq!(disk_after, disk_before);
    assert!(!dir.join("apps/new").exists());
    assert_eq!(g.head(&dir).unwrap(), head);
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");

    // The tree differs from the parent's in exactly the given files; modes kept or 100644.
    assert_eq!(
        git(
            &dir,
            &[
                "diff-tree",
                "-r",
                "--no-commit-id",
                "--name-status",
                &head,
                &new
            ]
        ),
        "A\tapps/new/values.yaml\nM\tapps/web/kustomization.yaml\nM\tscripts/render.sh"
    );
    let modes = git(
        &dir,
        &["ls-tree", "-r", "--format=%(objectmode) %(path)", &new],
    );
    assert_eq!(
        modes,
        "100644 apps/api/values.yaml\n100644 apps/new/values.yaml\n\
         100644 apps/web/kustomization.yaml\n100755 scripts/render.sh"
    );
    // Content stored byte for byte (CRLF kept, no filters).
    assert_eq!(
        g.show_file(&dir, &new, SCRIPT).unwrap().unwrap(),
        script.as_bytes()
    );
    assert_eq!(
        g.show_file(&dir, &new, WEB).unwrap().unwrap(),
        web.as_bytes()
    );
    assert_eq!(
        g.show_file(&dir, &head, "apps/new/values.yaml").unwrap(),
        None
    );
    assert_eq!(g.show_file(&dir, &new, "no/such.yaml").unwrap(), None);
    assert!(matches!(
        g.show_file(&dir, &new, "apps"),
        Err(Error::Invalid { .. })
    ));

    // tree_of compares content, not commits.
    let again = g
        .commit_files(
            &dir,
            &head,
            &files(&[
                (SCRIPT, script),
                ("apps/new/values.yaml", created),
                (WEB, web),
            ]),
            "another message",
            &releaser(),
            &releaser(),
        )
        .unwrap();
    assert_ne!(again, new);
    assert_eq!(
        g.tree_of(&dir, &again).unwrap(),
        g.tree_of(&dir, &new).unwrap()
    );
    assert_eq!(
        g.tree_of(&dir, &new).unwrap(),
        git(&dir, &["rev-parse", &format!("{new}^{{tree}}")])
    );
    assert_ne!(
        g.tree_of(&dir, &head).unwrap(),
        g.tree_of(&dir, &new).unwrap()
    );

    // Read back with log: identities, subject, body, trailers in order.
    let log = g.log(&dir, &new, 10).unwrap();
    assert_eq!(log.len(), 2, "{log:#?}"); // the depth-1 clone ends at head
    assert_eq!(
        log[0],
        CommitInfo {
            sha: new.clone(),
            parents: vec![head.clone()],
            author: bot(),
            committer: releaser(),
            subject: "Bump ghcr.io/acme/web to 1.3.0".to_string(),
            body: "Updates the web image.\n\n\
                   Imagebump-Update: ghcr.io/acme/web 1.2.0 -> 1.3.0\n\
                   Imagebump-Group: apps/web"
                .to_string(),
            trailers: vec![
                (
                    "Imagebump-Update".to_string(),
                    "ghcr.io/acme/web 1.2.0 -> 1.3.0".to_string()
                ),
                ("Imagebump-Group".to_string(), "apps/web".to_string()),
            ],
        }
    );
    assert_eq!(log[1].sha, head);
    assert_eq!(log[1].subject, "make the script executable");
    assert_eq!(log[1].parents, Vec::<String>::new()); // shallow boundary: parents cut
                                                      // commit-tree stores the message verbatim; a missing final newline is added.
    assert_eq!(
        git(&dir, &["cat-file", "commit", &again]).lines().last(),
        Some("another message")
    );

    // Paths that are not plain relative paths are refused before git runs; so are paths
    // that would replace a directory, or a file by a directory (update-index would do it).
    for bad in ["/etc/passwd", "../x", "a//b", ".git/config", "a/./b", ""] {
        let err = g
            .commit_files(&dir, &head, &files(&[(bad, "x")]), "m", &bot(), &bot())
            .unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{bad}: {err}");
    }
    for (bad, why) in [
        (
            vec![(WEB, web), ("apps/web", "x")],
            "invalid file path (also the directory of another) \"apps/web\" for git",
        ),
        (
            vec![("apps/web", "x")],
            "invalid file path (a directory) \"apps/web\" for git",
        ),
        (
            vec![("apps/web/kustomization.yaml/x.yaml", "x")],
            "invalid file path (below a file or submodule) \
             \"apps/web/kustomization.yaml/x.yaml\" for git",
        ),
    ] {
        let err = g
            .commit_files(&dir, &head, &files(&bad), "m", &bot(), &bot())
            .unwrap_err();
        assert_eq!(err.to_string(), why);
    }
}

#[test]
fn commit_files_keeps_symlinks_and_refuses_to_write_over_submodules() {
    let work = support::make_worktree(&[(WEB, "web: 1.0.0\n")]);
    let w = work.path();
    std::os::unix::fs::symlink("v1.yaml", w.join("current.yaml")).unwrap();
    git(w, &["add", "current.yaml"]);
    let gitlink = format!("160000,{},vendor/lib", "1".repeat(40));
    git(w, &["update-index", "--add", "--cacheinfo", &gitlink]);
    fs::create_dir_all(w.join("vendor/lib")).unwrap(); // an uninitialised submodule
    git(w, &["commit", "--quiet", "-m", "link and submodule"]);
    let g = git_without_token();
    let head = g.head(w).unwrap();

    let new = g
        .commit_files(
            w,
            &head,
            &files(&[("current.yaml", "v2.yaml")]),
            "m",
            &bot(),
            &bot(),
        )
        .unwrap();
    assert_eq!(
        git(
            w,
            &[
                "ls-tree",
                "--format=%(objectmode) %(path)",
                &new,
                "current.yaml"
            ]
        ),
        "120000 current.yaml"
    );
    assert_eq!(
        g.show_file(w, &new, "current.yaml").unwrap().unwrap(),
        b"v2.yaml"
    );
    for (path, why) in [
        (
            "vendor/lib",
            "invalid file path (a submodule) \"vendor/lib\" for git",
        ),
        (
            "vendor/lib/x.yaml",
            "invalid file path (below a file or submodule) \"vendor/lib/x.yaml\" for git",
        ),
    ] {
        let err = g
            .commit_files(w, &head, &files(&[(path, "x")]), "m", &bot(), &bot())
            .unwrap_err();
        assert_eq!(err.to_string(), why);
    }
    assert_eq!(git(w, &["status", "--porcelain"]), "");
}

/// `git cat-file commit` of `sha` without the dates (two commits made a second apart).
fn commit_text_undated(dir: &Path, sha: &str) -> String {
    git(dir, &["cat-file", "commit", sha])
        .lines()
        .map(|l| {
            if l.starts_with("author ") || l.starts_with("committer ") {
                l.rsplitn(3, ' ').last().unwrap_or(l).to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn commit_many_builds_what_commit_files_builds_each_on_the_parent() {
    let work = support::make_worktree(&[
        (WEB, "web: 1.0.0\n"),
        (API, "api: 2.0.0\n"),
        (SCRIPT, "#!/bin/sh\n"),
    ]);
    let w = work.path();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(w.join(SCRIPT), fs::Permissions::from_mode(0o755)).unwrap();
    git(w, &["update-index", "--chmod=+x", SCRIPT]);
    std::os::unix::fs::symlink("v1.yaml", w.join("current.yaml")).unwrap();
    git(w, &["add", "current.yaml"]);
    let gitlink = format!("160000,{},vendor/lib", "1".repeat(40));
    git(w, &["update-index", "--add", "--cacheinfo", &gitlink]);
    fs::create_dir_all(w.join("vendor/lib")).unwrap();
    git(
        w,
        &["commit", "--quiet", "-m", "link, script and submodule"],
    );
    let g = git_without_token();
    let head = g.head(w).unwrap();
    let index_before = fs::read(w.join(".git/index")).unwrap();

    let spec = |list: &[(&str, &str)], message: &str| NewCommit {
        files: files(list),
        message: message.to_string(),
    };
    let specs = [
        spec(
            &[(WEB, "web: 1.1.0\n"), ("apps/new/values.yaml", "new: 1\n")],
            "Bump web\n\nImagebump-Update: web 1.0.0 -> 1.1.0",
        ),
        spec(
            &[
                (SCRIPT, "#!/bin/sh\r\nexit 0\r\n"),
                ("current.yaml", "v2.yaml"),
            ],
            "Keep modes\n",
        ),
        spec(&[("apps/web", "x")], "a directory"),
        spec(&[("vendor/lib/x.yaml", "x")], "below a submodule"),
        spec(&[(WEB, "x"), ("../x", "x")], "not a tree path"),
        spec(&[(API, "x"), ("apps/api", "x")], "a file and its directory"),
        spec(&[], "nothing changes"),
        spec(&[("apps/we\"ird name.yaml", "odd: \"name\"\n")], "odd name"),
    ];
    let many = g.commit_many(w, &head, &specs, &bot(), &releaser());
    assert_eq!(many.len(), specs.len());
    let mut built = 0;
    for (spec, got) in specs.iter().zip(&many) {
        let one = g.commit_files(w, &head, &spec.files, &spec.message, &bot(), &releaser());
        match (got, one) {
            (Ok(a), Ok(b)) => {
                built += 1;
                assert_eq!(
                    commit_text_undated(w, a),
                    commit_text_undated(w, &b),
                    "{}",
                    spec.message
                );
                assert_eq!(g.tree_of(w, a).unwrap(), g.tree_of(w, &b).unwrap());
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("{}: commit_many {a:?}, commit_files {b:?}", spec.message),
        }
    }
    assert_eq!(built, 4);
    let ok = |i: usize| many[i].as_ref().unwrap().clone();
    assert_eq!(
        git(
            w,
            &["ls-tree", "-r", "--format=%(objectmode) %(path)", &ok(1)]
        ),
        "100644 apps/api/values.yaml\n100644 apps/web/kustomization.yaml\n\
         120000 current.yaml\n100755 scripts/render.sh\n160000 vendor/lib"
    );
    assert_eq!(
        g.show_file(w, &ok(1), SCRIPT).unwrap().unwrap(),
        b"#!/bin/sh\r\nexit 0\r\n"
    );
    assert_eq!(
        g.show_file(w, &ok(7), "apps/we\"ird name.yaml")
            .unwrap()
            .unwrap(),
        b"odd: \"name\"\n"
    );
    assert_eq!(g.tree_of(w, &ok(6)).unwrap(), g.tree_of(w, &head).unwrap());
    assert_eq!(
        git(&w.join(".git"), &["cat-file", "commit", &ok(0)])
            .lines()
            .last(),
        Some("Imagebump-Update: web 1.0.0 -> 1.1.0")
    );
    // Nothing else changed: no ref left behind, the index and the checkout as they were.
    assert_eq!(
        git(w, &["for-each-ref", "--format=%(refname)"]),
        "refs/heads/main"
    );
    assert_eq!(fs::read(w.join(".git/index")).unwrap(), index_before);
    assert_eq!(git(w, &["status", "--porcelain"]), "");

    // An identity git would rewrite (trailing space) is left to commit_files, with the same
    // result.
    let spaced = Signature {
        name: "imagebump ".to_string(),
        email: "bot@example.invalid".to_string(),
    };
    let many = g.commit_many(w, &head, &specs[..1], &spaced, &spaced);
    let one = g
        .commit_files(
            w,
            &head,
            &specs[0].files,
            &specs[0].message,
            &spaced,
            &spaced,
        )
        .unwrap();
    let many = many[0].as_ref().unwrap();
    assert_eq!(commit_text_undated(w, many), commit_text_undated(w, &one));
    assert!(commit_text_undated(w, many).contains("\nauthor imagebump <bot@example.invalid>\n"));
}

#[test]
fn one_push_sets_three_branches_and_leases_guard_each_branch() {
    let (_work, server) = serve();
    let (_tmp, dir) = clone(&server, 1);
    let g = git_with(TOKEN);
    let head = g.head(&dir).unwrap();
    let web1 = bot_commit(&dir, &head, WEB, "web: 1.3.0\n", "Bump web");
    let api1 = bot_commit(&dir, &head, API, "api: 2.1.0\n", "Bump api");
    let all1 = bot_commit(&dir, &web1, API, "api: 2.1.0\n", "Bump all");

    // Three new branches, one push.
    let outcome = g
        .push(
            &dir,
            &[
                update("imagebump/web", &web1, None),
                update("imagebump/api", &api1, None),
                update("imagebump/all", &all1, None),
            ],
        )
        .unwrap();
    assert_eq!(
        outcome,
        PushOutcome {
            accepted: strings(&["imagebump/web", "imagebump/api", "imagebump/all"]),
            rejected: vec![],
        }
    );
    assert_eq!(server.requests_matching(RECEIVE_PACK_POST).len(), 1);
    assert_eq!(server.requests_matching(RECEIVE_PACK_REFS).len(), 1);
    assert_eq!(
        server.branches(),
        vec![
            ("imagebump/all".to_string(), all1.clone()),
            ("imagebump/api".to_string(), api1.clone()),
            ("imagebump/web".to_string(), web1.clone()),
            ("main".to_string(), head.clone()),
        ]
    );
    assert_eq!(
        server.file_at("imagebump/all", API).unwrap(),
        "api: 2.1.0\n"
    );
    assert_eq!(
        server.log("imagebump/all", "%s"),
        [
            "Bump all",
            "Bump web",
            "make the script executable",
            "initial"
        ]
    );

    // The right lease: a rebuilt branch replaces the old one (not a fast-forward).
    let web2 = bot_commit(&dir, &head, WEB, "web: 1.4.0\n", "Bump web");
    let outcome = g
        .push(&dir, &[update("imagebump/web", &web2, Some(&web1))])
        .unwrap();
    assert_eq!(outcome.accepted, strings(&["imagebump/web"]));
    assert!(outcome.rejected.is_empty());
    assert_eq!(server.branch_sha("imagebump/web").unwrap(), web2);
    assert_eq!(server.requests_matching(RECEIVE_PACK_POST).len(), 2);

    // Someone pushes to the bot's api branch meanwhile: our lease on it is stale. That
    // branch alone is rejected, the other two go through in the same push.
    let human = server.commit_on("imagebump/api", &[(API, Some("api: 2.1.1\n"))], "tweak");
    let web3 = bot_commit(&dir, &head, WEB, "web: 1.5.0\n", "Bump web");
    let api3 = bot_commit(&dir, &head, API, "api: 2.2.0\n", "Bump api");
    let all3 = bot_commit(&dir, &web3, API, "api: 2.2.0\n", "Bump all");
    let outcome = g
        .push(
            &dir,
            &[
                update("imagebump/web", &web3, Some(&web2)),
                update("imagebump/api", &api3, Some(&api1)),
                update("imagebump/all", &all3, Some(&all1)),
            ],
        )
        .unwrap();
    assert_eq!(
        outcome,
        one_refused(
            &["imagebump/web", "imagebump/all"],
            "imagebump/api",
            "stale info"
        )
    );
    assert_eq!(server.branch_sha("imagebump/api").unwrap(), human);
    assert_eq!(server.branch_sha("imagebump/web").unwrap(), web3);
    assert_eq!(server.branch_sha("imagebump/all").unwrap(), all3);
    assert_eq!(server.requests_matching(RECEIVE_PACK_POST).len(), 3);

    // "Must not exist yet" on a branch that exists: rejected by the lease before anything
    // is sent (no receive-pack POST at all). The same commit it already has: up to date.
    let outcome = g
        .push(
            &dir,
            &[
                update("imagebump/web", &api3, None),
                update("imagebump/all", &all3, None),
            ],
        )
        .unwrap();
    assert_eq!(
        outcome,
        one_refused(&["imagebump/all"], "imagebump/web", "stale info")
    );
    assert_eq!(server.requests_matching(RECEIVE_PACK_POST).len(), 3);
    assert_eq!(server.branch_sha("imagebump/web").unwrap(), web3);

    // A lease on a commit the clone does not have (the human's, never fetched): it holds,
    // and the branch is replaced.
    let api4 = bot_commit(&dir, &head, API, "api: 2.3.0\n", "Bump api");
    let outcome = g
        .push(&dir, &[update("imagebump/api", &api4, Some(&human))])
        .unwrap();
    assert_eq!(outcome.accepted, strings(&["imagebump/api"]));
    assert_eq!(server.branch_sha("imagebump/api").unwrap(), api4);
    assert_eq!(server.requests_matching(RECEIVE_PACK_POST).len(), 4);

    // In one push, a branch leased on its right commit goes through while one that exists
    // but was taken to be new is refused (the bare lease that covers every branch without
    // one of its own).
    let api5 = bot_commit(&dir, &head, API, "api: 2.4.0\n", "Bump api");
    let web5 = bot_commit(&dir, &head, WEB, "web: 1.6.0\n", "Bump web");
    let outcome = g
        .push(
            &dir,
            &[
                update("imagebump/api", &api5, Some(&api4)),
                update("imagebump/web", &web5, None),
            ],
        )
        .unwrap();
    assert_eq!(
        outcome,
        one_refused(&["imagebump/api"], "imagebump/web", "stale info")
    );
    assert_eq!(server.branch_sha("imagebump/api").unwrap(), api5);
    assert_eq!(server.branch_sha("imagebump/web").unwrap(), web3);

    // Nothing to push: no request.
    assert_eq!(g.push(&dir, &[]).unwrap(), PushOutcome::default());
    assert_eq!(server.requests_matching(RECEIVE_PACK_REFS).len(), 6);
    assert_eq!(push_refs_left(&dir), "");
}

/// The local refs `Git::push` names its commits by that are still in the clone: none once
/// a push is over, whatever its outcome.
fn push_refs_left(dir: &std::path::Path) -> String {
    let left = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["for-each-ref", "refs/imagebump-push/"])
        .output()
        .unwrap();
    assert!(left.status.success());
    String::from_utf8_lossy(&left.stdout).into_owned()
}

#[test]
fn branches_the_server_declines_are_reported_per_branch() {
    let (_work, server) = serve();
    let (_tmp, dir) = clone(&server, 1);
    let g = git_with(TOKEN);
    let head = g.head(&dir).unwrap();
    let web = bot_commit(&dir, &head, WEB, "web: 1.3.0\n", "Bump web");
    let api = bot_commit(&dir, &head, API, "api: 2.1.0\n", "Bump api");

    // An `update` hook declines one ref; the other ref of the push is kept.
    server.reject_updates_to(&["refs/heads/imagebump/api"], "protected branch");
    let outcome = g
        .push(
            &dir,
            &[
                update("imagebump/web", &web, None),
                update("imagebump/api", &api, None),
            ],
        )
        .unwrap();
    assert_eq!(
        outcome,
        one_refused(&["imagebump/web"], "imagebump/api", "hook declined")
    );
    assert_eq!(server.branch_sha("imagebump/api"), None);

    // A `pre-receive` hook declines the push as a whole: every branch is rejected.
    server.accept_pushes();
    server.reject_all_pushes("frozen");
    let web2 = bot_commit(&dir, &head, WEB, "web: 1.4.0\n", "Bump web");
    let outcome = g
        .push(
            &dir,
            &[
                update("imagebump/web", &web2, Some(&web)),
                update("imagebump/api", &api, None),
            ],
        )
        .unwrap();
    assert_eq!(
        outcome,
        PushOutcome {
            accepted: vec![],
            rejected: vec![
                (
                    "imagebump/web".to_string(),
                    "pre-receive hook declined".to_string()
                ),
                (
                    "imagebump/api".to_string(),
                    "pre-receive hook declined".to_string()
                ),
            ],
        }
    );
    assert_eq!(server.branch_sha("imagebump/web").unwrap(), web);

    server.accept_pushes();
    let outcome = g
        .push(&dir, &[update("imagebump/api", &api, None)])
        .unwrap();
    assert_eq!(outcome.accepted, strings(&["imagebump/api"]));
}

#[test]
fn remote_heads_fetch_branches_and_fetch_base() {
    let (_work, server) = serve();
    let (_tmp, dir) = clone(&server, 3);
    let g = git_with(TOKEN);
    let head = g.head(&dir).unwrap();
    let a = bot_commit(&dir, &head, WEB, "web: 1.3.0\n", "Bump web");
    let b = bot_commit(&dir, &head, API, "api: 2.1.0\n", "Bump api");
    let outcome = g
        .push(
            &dir,
            &[
                update("imagebump/a", &a, None),
                update("imagebump/b", &b, None),
                update("imagebumpx", &a, None),
                update("feature/imagebump/c", &b, None),
            ],
        )
        .unwrap();
    assert_eq!(outcome.accepted.len(), 4, "{outcome:?}");

    // Only branches whose name starts with the prefix (not a tail match, not a glob).
    let heads = g.remote_heads(&dir, "imagebump/").unwrap();
    assert_eq!(
        heads,
        BTreeMap::from([
            ("imagebump/a".to_string(), a.clone()),
            ("imagebump/b".to_string(), b.clone()),
        ])
    );
    assert_eq!(
        g.remote_heads(&dir, "imagebump/*").unwrap(),
        BTreeMap::new()
    );
    assert_eq!(g.remote_heads(&dir, "renovate/").unwrap(), BTreeMap::new());

    // The bot's branches into refs/remotes/origin/*, in one fetch.
    let fetches_before = server.requests_matching("service=git-upload-pack").len();
    g.fetch_branches(&dir, &strings(&["imagebump/a", "imagebump/b"]), 4)
        .unwrap();
    assert_eq!(
        server.requests_matching("service=git-upload-pack").len(),
        fetches_before + 1
    );
    assert_eq!(
        g.tracking_sha(&dir, "imagebump/a").unwrap(),
        Some(a.clone())
    );
    assert_eq!(
        g.tracking_sha(&dir, "imagebump/b").unwrap(),
        Some(b.clone())
    );
    let ahead = g.log(&dir, "origin/main..origin/imagebump/b", 10).unwrap();
    assert_eq!(subjects(&ahead), ["Bump api"]);
    assert_eq!(
        g.show_file(&dir, "origin/imagebump/a", WEB)
            .unwrap()
            .unwrap(),
        b"web: 1.3.0\n"
    );

    // A branch deleted on the remote since it was listed is skipped, and its stale
    // remote-tracking ref goes.
    server.git(&["branch", "-D", "imagebump/a"]);
    g.fetch_branches(
        &dir,
        &strings(&["imagebump/gone", "imagebump/a", "imagebump/b"]),
        4,
    )
    .unwrap();
    assert_eq!(g.tracking_sha(&dir, "imagebump/gone").unwrap(), None);
    assert_eq!(g.tracking_sha(&dir, "imagebump/a").unwrap(), None);
    assert_eq!(
        g.tracking_sha(&dir, "imagebump/b").unwrap(),
        Some(b.clone())
    );
    g.fetch_branches(&dir, &[], 4).unwrap();

    // The base moved on the server: fetch_base returns the new tip.
    let moved = server.commit_on("main", &[("README.md", Some("hello\n"))], "docs");
    assert_eq!(g.fetch_base(&dir, "main", 3).unwrap(), moved);
    assert_eq!(server.branch_sha("main").unwrap(), moved);
    assert_eq!(g.tracking_sha(&dir, "main").unwrap(), Some(moved.clone()));
    assert_eq!(
        g.head(&dir).unwrap(),
        head,
        "the checkout stays where it was"
    );
    let rebuilt = bot_commit(&dir, &moved, API, "api: 2.1.0\n", "Bump api");
    let outcome = g
        .push(&dir, &[update("imagebump/b", &rebuilt, Some(&b))])
        .unwrap();
    assert_eq!(outcome.accepted, strings(&["imagebump/b"]));
    assert_eq!(server.log("imagebump/b", "%s")[..2], ["Bump api", "docs"]);

    let err = g.fetch_base(&dir, "no-such-base", 3).unwrap_err();
    assert!(
        err.to_string()
            .contains("couldn't find remote ref refs/heads/no-such-base"),
        "{err}"
    );
}

#[test]
fn a_shallow_depth_on_fetch_cuts_the_base_history_and_fetch_base_restores_it() {
    let work = support::make_worktree(&[(WEB, "web: 1.0.0\n")]);
    for i in 1..=5 {
        fs::write(work.path().join(WEB), format!("web: 1.{i}.0\n")).unwrap();
        git(work.path(), &["commit", "--quiet", "-am", &format!("c{i}")]);
    }
    let server = GitServer::http_with_token(work.path(), "gitops", TOKEN);
    let (_tmp, dir) = clone(&server, 4);
    let g = git_with(TOKEN);
    let head = g.head(&dir).unwrap();
    let bump = bot_commit(&dir, &head, API, "api\n", "Bump api");
    g.push(&dir, &[update("imagebump/x", &bump, None)]).unwrap();
    assert_eq!(
        subjects(&g.log(&dir, "origin/main", 10).unwrap()),
        ["c5", "c4", "c3", "c2"]
    );

    // depth 2 from the branch tip puts a shallow boundary on main's tip.
    g.fetch_branches(&dir, &strings(&["imagebump/x"]), 2)
        .unwrap();
    assert_eq!(subjects(&g.log(&dir, "origin/main", 10).unwrap()), ["c5"]);
    // Fetching the base again at its depth lifts it.
    g.fetch_base(&dir, "main", 4).unwrap();
    assert_eq!(
        subjects(&g.log(&dir, "origin/main", 10).unwrap()),
        ["c5", "c4", "c3", "c2"]
    );
    // A depth of the clone's depth plus the branch's own commits leaves the base alone.
    g.fetch_branches(&dir, &strings(&["imagebump/x"]), 5)
        .unwrap();
    assert_eq!(
        subjects(&g.log(&dir, "origin/main", 10).unwrap()),
        ["c5", "c4", "c3", "c2"]
    );
    assert_eq!(
        subjects(&g.log(&dir, "origin/imagebump/x", 10).unwrap()),
        ["Bump api", "c5", "c4", "c3", "c2"]
    );
}

#[test]
fn log_over_a_depth_limited_clone_sees_reverts_and_their_trailers() {
    let (_work, server) = serve();
    let (_tmp, dir) = clone(&server, 1);
    let g = git_with(TOKEN);
    let head = g.head(&dir).unwrap();
    let message = "Bump ghcr.io/acme/web to 1.3.0\n\n\
                   Imagebump-Update: ghcr.io/acme/web 1.2.0 -> 1.3.0\n";
    let merged = g
        .commit_files(
            &dir,
            &head,
            &files(&[(WEB, "web: 1.3.0\n")]),
            message,
            &bot(),
            &bot(),
        )
        .unwrap();
    // The pull request was merged (fast-forward), then a human reverted it, then more work.
    let outcome = g
        .push(&dir, &[update("main", &merged, Some(&head))])
        .unwrap();
    assert_eq!(outcome.accepted, strings(&["main"]));
    let revert = server.revert_on("main", &merged);
    server.commit_on("main", &[("README.md", Some("one\n"))], "one");
    server.commit_on("main", &[("README.md", Some("two\n"))], "two");

    // depth 4 reaches the reverted commit: the revert names it, its trailers are readable.
    let (_tmp4, deep) = clone(&server, 4);
    let log = g.log(&deep, "HEAD", 50).unwrap();
    assert_eq!(
        subjects(&log),
        [
            "two",
            "one",
            "Revert \"Bump ghcr.io/acme/web to 1.3.0\"",
            "Bump ghcr.io/acme/web to 1.3.0"
        ]
    );
    assert_eq!(log[2].sha, revert);
    assert_eq!(log[2].body, format!("This reverts commit {merged}."));
    assert_eq!(log[2].trailers, vec![]);
    assert_eq!(log[3].sha, merged);
    assert_eq!(
        log[3].trailers,
        vec![(
            "Imagebump-Update".to_string(),
            "ghcr.io/acme/web 1.2.0 -> 1.3.0".to_string()
        )]
    );
    assert_eq!(g.log(&deep, "HEAD", 2).unwrap().len(), 2);
    assert_eq!(g.log(&deep, "HEAD", 0).unwrap(), vec![]);
    assert_eq!(g.log(&deep, "HEAD..HEAD", 5).unwrap(), vec![]);

    // depth 3 shows the revert but not the commit it reverts: its trailers are out of reach.
    let (_tmp3, shallow) = clone(&server, 3);
    let log = g.log(&shallow, "HEAD", 50).unwrap();
    assert_eq!(
        subjects(&log)[2],
        "Revert \"Bump ghcr.io/acme/web to 1.3.0\""
    );
    assert_eq!(log.len(), 3);
    assert!(log[2].parents.is_empty(), "{:?}", log[2].parents);
    assert!(try_git(&shallow, &["cat-file", "-e", &merged]).is_none());
    assert!(g.log(&shallow, &merged, 1).is_err());
    assert!(g.show_file(&shallow, &merged, WEB).is_err());
}

#[test]
fn the_token_stays_out_of_config_errors_and_urls_and_a_wrong_token_fails_clearly() {
    let (_work, server) = serve();
    let (_tmp, dir) = clone(&server, 2);
    let g = git_with(TOKEN);
    let head = g.head(&dir).unwrap();
    let c = bot_commit(&dir, &head, WEB, "web: 1.3.0\n", "Bump web");
    g.push(&dir, &[update("imagebump/web", &c, None)]).unwrap();
    g.fetch_branches(&dir, &strings(&["imagebump/web"]), 3)
        .unwrap();
    g.remote_heads(&dir, "imagebump/").unwrap();
    g.fetch_base(&dir, "main", 2).unwrap();

    let encoded = support::base64_encode(format!("x-access-token:{TOKEN}").as_bytes());
    assert_eq!(
        git(&dir, &["config", "--get", "remote.origin.url"]),
        server.url()
    );
    for file in walk(&dir.join(".git")) {
        let bytes = fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(TOKEN) && !text.contains(&encoded),
            "{} holds the token",
            file.display()
        );
    }

    // Every request carried the header (and only the header): never in a URL.
    let log = server.request_log();
    assert!(log.lines().count() >= 10, "{log}");
    for line in log.lines() {
        assert!(
            line.contains(&format!(
                "authorization=Basic {encoded} user=x-access-token password={TOKEN} status=200"
            )),
            "{line}"
        );
        let without_auth = line
            .replace(&format!("authorization=Basic {encoded}"), "")
            .replace(&format!("password={TOKEN}"), "");
        assert!(!without_auth.contains(TOKEN), "{line}");
    }

    // git's stderr is scrubbed: a ref named like the token is not echoed back.
    let err = g.fetch_base(&dir, TOKEN, 1).unwrap_err().to_string();
    assert!(
        err.contains("couldn't find remote ref refs/heads/***"),
        "{err}"
    );
    assert!(!err.contains(TOKEN), "{err}");

    // A wrong token, or none: an authentication error, no prompt, no secret in the text.
    let wrong = "ghs_WRONGTOKEN999";
    let c2 = bot_commit(&dir, &head, WEB, "web: 1.4.0\n", "Bump web");
    for g in [git_with(wrong), git_without_token()] {
        let err = g
            .push(&dir, &[update("imagebump/web", &c2, Some(&c))])
            .unwrap_err();
        assert!(matches!(err, Error::Auth { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with("git push failed: the remote refused the credentials"),
            "{text}"
        );
        assert!(text.contains("IMAGEBUMP_GIT_TOKEN"), "{text}");
        assert!(!text.contains(wrong) && !text.contains(TOKEN), "{text}");
        assert_eq!(push_refs_left(&dir), "", "after a failed push");

        let err = g.remote_heads(&dir, "imagebump/").unwrap_err();
        assert!(matches!(err, Error::Auth { .. }), "{err:?}");
        let err = g
            .fetch_branches(&dir, &strings(&["imagebump/web"]), 1)
            .unwrap_err();
        assert!(matches!(err, Error::Auth { .. }), "{err:?}");
        let tmp = tempfile::tempdir().unwrap();
        let err = g
            .clone_depth(&server.url(), None, &tmp.path().join("r"), 5)
            .unwrap_err();
        assert!(err.to_string().starts_with("git clone failed: "), "{err}");
        assert!(matches!(err, Error::Auth { .. }), "{err:?}");
    }
    assert_eq!(server.branch_sha("imagebump/web").unwrap(), c);
    let denied = server.requests_matching("status=401");
    assert!(!denied.is_empty());
    assert!(
        denied.iter().all(|l| !l.contains("password=ghs_PUSH")),
        "{denied:?}"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
