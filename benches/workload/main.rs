//! imagebump's benchmark on the reference workload (docs/performance.md):
//!
//! ```sh
//! cargo bench --bench workload            # the whole workload, 5 runs per figure
//! cargo bench --bench workload -- --help  # options
//! ```
//!
//! It builds the workload itself: a real `docker-registry` on a free loopback port (TLS with a
//! self-signed certificate, as `../shared/bench/registry.sh`), seeded once with 300
//! repositories x 200 tags (kept under `target/bench-workload/`), and generated manifest
//! repositories (as `../shared/bench/genrepo.py`). It times the release binary cargo built
//! for it (`target/release/imagebump`) as a whole process, and prints one table of figures,
//! targets and verdicts. Exit status 1 when a hard target fails.

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

mod measure;
mod registry;
mod repo;

use imagebump_forge::fake::github;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::UNIX_EPOCH;

use measure::{median, spread, Job, Sample};
use registry::Shape;
use repo::Current;
use serde_json::Value;

/// Renovate 44, lookup-only dry run on this workload, measured in earlier sessions with
/// `../shared/bench/renovate.sh`: the figures compared with when `--renovate` is not given or
/// cannot run it (it needs Node and Renovate from npm).
const RENOVATE_WALL: f64 = 52.5;
const RENOVATE_RSS_MIB: f64 = 925.0;

const USAGE: &str = "\
usage: cargo bench --bench workload [-- OPTIONS]

  --runs N       counted runs per figure (default 5; one warm-up run first)
  --build-runs N counted newest-build runs (default 3; each takes ~20 s: 12,000 requests)
  --pr-runs N    counted pull-request-mode runs (default 3)
  --quick        a small workload (30 repositories, 100 apps) to try the harness
  --skip-scaling leave out the 10x-apps runs
  --skip-pr      leave out pull-request mode
  --only-pr      only pull-request mode (with the registry it needs): seconds, not minutes
  --pr-log F     run pull-request mode with IMAGEBUMP_LOG=F (e.g. imagebump=debug: every git
                 command, timestamped, in the kept stderr files; with --keep)
  --binary PATH  measure this imagebump binary instead of the one cargo built (to compare a
                 build from before a change with one after, in the same sitting)
  --pr-wrap CMD  run pull-request mode's imagebump under CMD (split at spaces, e.g.
                 \"strace -f -c -o /tmp/pr.strace --\"), to profile it; times include CMD's
  --renovate     also run Renovate on the 1,000 apps, when ../shared/bench/renovate.sh is
                 there (it needs Node and Renovate from npm, so the internet, on first use)
  --keep         keep the generated repositories and outputs (path printed)
";

struct Opts {
    runs: usize,
    build_runs: usize,
    pr_runs: usize,
    quick: bool,
    scaling: bool,
    pr: bool,
    /// Pull-request mode alone.
    only_pr: bool,
    /// `IMAGEBUMP_LOG` for the pull-request runs.
    pr_log: Option<String>,
    /// A command the pull-request runs' imagebump runs under (a profiler).
    pr_wrap: Vec<String>,
    /// Another imagebump binary to measure.
    binary: Option<PathBuf>,
    renovate: bool,
    keep: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        runs: 5,
        build_runs: 3,
        pr_runs: 3,
        quick: false,
        scaling: true,
        pr: true,
        only_pr: false,
        pr_log: None,
        pr_wrap: Vec::new(),
        binary: None,
        renovate: false,
        keep: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut count = |name: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or_else(|| die(&format!("{name} needs a positive number")))
        };
        match a.as_str() {
            "--runs" => o.runs = count("--runs"),
            "--build-runs" => o.build_runs = count("--build-runs"),
            "--pr-runs" => o.pr_runs = count("--pr-runs"),
            "--quick" => o.quick = true,
            "--skip-scaling" => o.scaling = false,
            "--skip-pr" => o.pr = false,
            "--only-pr" => o.only_pr = true,
            "--pr-log" => {
                o.pr_log = Some(
                    args.next()
                        .unwrap_or_else(|| die("--pr-log needs a filter")),
                )
            }
            "--binary" => {
                let path = args.next().unwrap_or_else(|| die("--binary needs a path"));
                o.binary = Some(PathBuf::from(path));
            }
            "--pr-wrap" => {
                let cmd = args
                    .next()
                    .unwrap_or_else(|| die("--pr-wrap needs a command"));
                o.pr_wrap = cmd.split_whitespace().map(str::to_string).collect();
            }
            "--renovate" => o.renovate = true,
            "--keep" => o.keep = true,
            // cargo bench passes --bench to every benchmark binary.
            "--bench" => {}
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if o.only_pr && !o.pr {
        die("--only-pr and --skip-pr leave nothing to run");
    }
    o
}

fn die(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2);
}

/// The workload's sizes.
#[derive(Clone, Copy)]
struct Workload {
    shape: Shape,
    apps: usize,
    per_app: usize,
    scale: usize,
    change_sets: usize,
}

const FULL: Workload = Workload {
    shape: Shape {
        repos: 300,
        tags: 200,
        dated: 20,
    },
    apps: 1000,
    per_app: 3,
    scale: 10,
    change_sets: 500,
};

const QUICK: Workload = Workload {
    shape: Shape {
        repos: 30,
        tags: 50,
        dated: 10,
    },
    apps: 100,
    per_app: 3,
    scale: 10,
    change_sets: 50,
};

// ---------------------------------------------------------------------------------------------
// the table
// ---------------------------------------------------------------------------------------------

#[derive(PartialEq)]
enum Verdict {
    Pass,
    Fail,
    /// Failed, but not a hard target.
    Miss,
    Info,
}

struct Row {
    figure: String,
    value: String,
    target: String,
    verdict: Verdict,
}

#[derive(Default)]
struct Table {
    rows: Vec<Row>,
}

impl Table {
    fn section(&mut self, title: &str) {
        self.info(&format!("[{title}]"), "");
    }

    fn info(&mut self, figure: &str, value: &str) {
        self.rows.push(Row {
            figure: figure.into(),
            value: value.into(),
            target: String::new(),
            verdict: Verdict::Info,
        });
    }

    /// A target: `hard` ones decide the exit status.
    fn check(&mut self, figure: &str, value: &str, target: &str, ok: bool, hard: bool) {
        let verdict = match (ok, hard) {
            (true, _) => Verdict::Pass,
            (false, true) => Verdict::Fail,
            (false, false) => Verdict::Miss,
        };
        self.rows.push(Row {
            figure: figure.into(),
            value: value.into(),
            target: target.into(),
            verdict,
        });
    }

    fn failed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Fail)
    }

    fn print(&self) {
        let w0 = self
            .rows
            .iter()
            .map(|r| r.figure.chars().count())
            .max()
            .unwrap_or(0);
        let w1 = self
            .rows
            .iter()
            .map(|r| r.value.chars().count())
            .max()
            .unwrap_or(0);
        let w2 = self
            .rows
            .iter()
            .map(|r| r.target.chars().count())
            .max()
            .unwrap_or(0);
        let pad =
            |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
        println!(
            "{}  {}  {}  RESULT",
            pad("FIGURE", w0),
            pad("VALUE: MEDIAN (MIN–MAX)", w1),
            pad("TARGET", w2)
        );
        for r in &self.rows {
            let verdict = match r.verdict {
                Verdict::Pass => "PASS",
                Verdict::Fail => "FAIL",
                Verdict::Miss => "miss (soft)",
                Verdict::Info => "",
            };
            println!(
                "{}  {}  {}  {verdict}",
                pad(&r.figure, w0),
                pad(&r.value, w1),
                pad(&r.target, w2)
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

fn require(tool: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        || Path::new(tool).is_file();
    if !found {
        die(&format!("{tool} not found: apt-get install -y {package}"));
    }
}

/// An isolated `git` (no user or system config, fixed identity).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn requests(report: &Value) -> (u64, u64, u64, u64, u64) {
    let r = &report["requests"];
    let n = |k: &str| r[k].as_u64().unwrap_or(u64::MAX);
    (
        n("tagListPages"),
        n("tokens"),
        n("manifests"),
        n("blobs"),
        n("retries"),
    )
}

fn requests_text(report: &Value) -> String {
    let (pages, tokens, manifests, blobs, retries) = requests(report);
    format!("{pages} tag-list pages, {manifests} manifests, {blobs} blobs, {tokens} tokens, {retries} retries")
}

/// The run exited 0 with a report saying no error: a failed run must not look fast.
fn assert_clean(s: &Sample, what: &str) -> Value {
    let report = s.json();
    let errors = report["errors"].as_array().map_or(0, Vec::len);
    if s.code != 0 || errors > 0 {
        panic!(
            "{what}: exit {} with {errors} error(s); stderr:\n{}",
            s.code,
            measure::tail(&s.stderr(), 20)
        );
    }
    report
}

struct Bench {
    bin: PathBuf,
    work: PathBuf,
    docker_config: PathBuf,
    /// Dated `build-N` tags per repository: newest-build's candidates.
    dated: usize,
}

impl Bench {
    /// `imagebump ARGS` with a private Docker config and none of the caller's settings.
    fn imagebump(&self, args: &[&str]) -> Job {
        let mut job = Job::new(&self.bin);
        for a in args {
            job = job.arg(*a);
        }
        for (k, _) in std::env::vars() {
            if k.starts_with("IMAGEBUMP_") || k.starts_with("GITHUB_") || k == "RUST_LOG" {
                job.env_remove.push(k);
            }
        }
        job.env("DOCKER_CONFIG", &self.docker_config)
            .env("NO_COLOR", "1")
    }

    fn dry_run(&self, dir: &Path, config: &Path) -> Job {
        self.imagebump(&[
            "run",
            "--dry-run",
            &dir.to_string_lossy(),
            "--config",
            &config.to_string_lossy(),
            "--output",
            "json",
        ])
    }
}

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

fn main() {
    let o = opts();
    let w = if o.quick { QUICK } else { FULL };
    for (tool, package) in [
        ("docker-registry", "docker-registry"),
        ("curl", "curl"),
        ("openssl", "openssl"),
        ("git", "git"),
        (measure::GNU_TIME, "time"),
    ] {
        require(tool, package);
    }
    // cargo builds the binary for a benchmark with the bench profile (= release) into
    // target/release/, and says where.
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_imagebump"));
    let target = bin
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf();
    let cache = target.join("bench-workload");
    let bin = o.binary.clone().unwrap_or(bin);
    let reg = registry::prepare(&cache, w.shape);
    let host = reg.host();
    let tmp = tempfile::Builder::new()
        .prefix("imagebump-bench-")
        .tempdir()
        .expect("temp dir");
    let work = tmp.path().to_path_buf();
    let docker_config = work.join("docker");
    fs::create_dir_all(&docker_config).unwrap();
    fs::write(docker_config.join("config.json"), "{}").unwrap();
    let b = Bench {
        bin: bin.clone(),
        work: work.clone(),
        docker_config,
        dated: w.shape.dated,
    };

    eprintln!(
        "generating the manifest repositories in {}…",
        work.display()
    );
    let r = w.shape.repos;
    let semver_dir = work.join("semver-1x");
    let used = repo::generate(&semver_dir, &host, w.apps, r, w.per_app, Current::Versions);
    let builds_dir = work.join("builds-1x");
    let used_builds = repo::generate(
        &builds_dir,
        &host,
        w.apps,
        r,
        w.per_app,
        Current::Builds(w.shape.dated),
    );
    let registries = format!(
        "registries:\n  - prefix: {host}\n    caFile: {}\n",
        reg.cert.display()
    );
    // The tag-list path against its curl floor: no platform check (its requests, one
    // manifest per distinct current and chosen tag, are counted in tests/request_counts.rs).
    let semver_cfg = work.join("semver.yaml");
    fs::write(
        &semver_cfg,
        format!("{registries}defaults:\n  platforms: [any]\n"),
    )
    .unwrap();
    // The defaults: the platform check reads the current and the chosen versions' images.
    let defaults_cfg = work.join("defaults.yaml");
    fs::write(&defaults_cfg, &registries).unwrap();
    let builds_cfg = work.join("newest-build.yaml");
    fs::write(
        &builds_cfg,
        format!(
            "{registries}images:\n  - match: \"{host}/bench/*\"\n    strategy: newest-build\n    allowTags: \"regexp:^build-[0-9]+$\"\n"
        ),
    )
    .unwrap();
    let out = work.join("out");
    fs::create_dir_all(&out).unwrap();

    let mut t = Table::default();
    t.info(
        "machine",
        &format!(
            "{} cores, {}",
            cores(),
            first_line(
                &fs::read_to_string("/proc/cpuinfo").unwrap_or_default(),
                "model name"
            )
        ),
    );
    t.info("binary", &bin.display().to_string());
    t.info(
        "workload",
        &format!(
            "{} repositories x {} tags over TLS; {} apps, {} references",
            r,
            w.shape.tags,
            w.apps,
            w.apps * w.per_app
        ),
    );

    if !o.only_pr {
        semver(
            &b,
            &o,
            &w,
            &reg,
            &semver_dir,
            &semver_cfg,
            &used,
            &out,
            &mut t,
        );
        platform_check(
            &b,
            &o,
            &reg,
            &semver_dir,
            &defaults_cfg,
            &used,
            &out,
            &mut t,
        );
        newest_build(
            &b,
            &o,
            &w,
            &reg,
            &builds_dir,
            &builds_cfg,
            &used_builds,
            &out,
            &mut t,
        );
    }
    if o.scaling && !o.only_pr {
        scaling(&b, &o, &w, &reg, &semver_dir, &semver_cfg, &out, &mut t);
    }
    if o.pr {
        pull_requests(&b, &o, &w, &host, &semver_cfg, &out, &mut t);
    }
    drop(reg);

    println!();
    t.print();
    if o.keep {
        let kept = tmp.keep();
        println!("\nkept: {}", kept.display());
    } else {
        // Removed here: `process::exit` below runs no destructor.
        drop(tmp);
    }
    if t.failed() {
        println!("\nA hard target failed.");
        std::process::exit(1);
    }
}

fn first_line(text: &str, key: &str) -> String {
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

/// `imagebump run --dry-run` (semver) against the curl floor, run in turn.
#[allow(clippy::too_many_arguments)]
fn semver(
    b: &Bench,
    o: &Opts,
    w: &Workload,
    reg: &registry::Registry,
    dir: &Path,
    cfg: &Path,
    used: &BTreeSet<usize>,
    out: &Path,
    t: &mut Table,
) {
    eprintln!("dry run (semver) and the curl floor, {} runs each…", o.runs);
    let curl_cfg = out.join("curl.cfg");
    let mut lines = String::new();
    for &i in used {
        lines.push_str(&format!(
            "url = \"{}/v2/{}/tags/list?n=1000\"\noutput = \"/dev/null\"\n",
            reg.base_url(),
            registry::repo_name(i)
        ));
    }
    fs::write(&curl_cfg, lines).unwrap();
    let curl = Job::new("curl")
        .arg("-sSf")
        .arg("--parallel")
        .arg("--cacert")
        .arg(&reg.cert)
        .arg("-K")
        .arg(&curl_cfg);
    let run = b.dry_run(dir, cfg);
    let (mut walls, mut rss, mut floors, mut ratios) = (vec![], vec![], vec![], vec![]);
    let mut report = Value::Null;
    for k in 0..=o.runs {
        let s = run.run(out, &format!("semver-{k}"));
        report = assert_clean(&s, "dry run (semver)");
        let c = curl.run(out, &format!("curl-{k}"));
        assert_eq!(c.code, 0, "curl: {}", c.stderr());
        if k > 0 {
            walls.push(s.wall);
            rss.push(mib(s.maxrss));
            floors.push(c.wall);
            ratios.push(s.wall / c.wall);
        }
    }
    let refs = w.apps * w.per_app;
    let updates = report["counts"]["updates"].as_u64().unwrap_or(0);
    t.section(&format!(
        "dry run, semver: {} apps, {refs} references, {} repositories",
        w.apps,
        used.len()
    ));
    t.check(
        "wall",
        &spread(&walls, 2, " s"),
        "≤ 1.0 s",
        median(&walls) <= 1.0,
        true,
    );
    let floor = (
        "curl floor: all tag lists, curl --parallel",
        "the curl floor",
    );
    floor_rows(t, floor, (&floors, &ratios), &rss);
    let (pages, tokens, manifests, blobs, retries) = requests(&report);
    t.check(
        "HTTP requests",
        &requests_text(&report),
        &format!("{} tag lists, 0 manifests", used.len()),
        pages == used.len() as u64 && manifests == 0 && blobs == 0 && tokens == 0 && retries == 0,
        true,
    );
    t.check(
        "updates found",
        &format!("{updates} of {refs} references"),
        "all",
        updates == refs as u64,
        true,
    );
    // Renovate measured in this run when asked and possible, else its earlier figures
    // (then the row is soft: not the same machine state).
    let measured = if o.renovate {
        renovate(dir, &reg.cert, out)
    } else {
        Err("not asked (--renovate)".into())
    };
    let (wall, mem, when, hard) = match measured {
        Ok((wall, mem)) => (wall, mem, "this run".to_string(), true),
        Err(why) => (
            RENOVATE_WALL,
            RENOVATE_RSS_MIB,
            format!("earlier run; here: {why}"),
            false,
        ),
    };
    let speedup = wall / median(&walls);
    t.check(
        &format!("vs Renovate 44 ({wall:.1} s, {mem:.0} MiB; {when})"),
        &format!(
            "{speedup:.0}× faster, {:.0}× less memory",
            mem / median(&rss)
        ),
        "≥ 150× faster",
        speedup >= 150.0,
        hard,
    );
}

/// The same dry run with the defaults, the platform check on, against its floor: the tag
/// lists, then a GET of every manifest it reads (each distinct current and chosen tag),
/// `curl --parallel`. The configs of single-platform images it also reads are not in the
/// floor, which makes the ratio stricter.
#[allow(clippy::too_many_arguments)]
fn platform_check(
    b: &Bench,
    o: &Opts,
    reg: &registry::Registry,
    dir: &Path,
    cfg: &Path,
    used: &BTreeSet<usize>,
    out: &Path,
    t: &mut Table,
) {
    eprintln!(
        "dry run with the platform check and its floor, {} runs each…",
        o.runs
    );
    let run = b.dry_run(dir, cfg);
    let first = assert_clean(&run.run(out, "defaults-0"), "dry run (defaults)");
    let manifests = read_manifests(&first);
    let floor = manifests_floor(reg, used, &manifests, out);
    let (mut walls, mut rss, mut floors, mut ratios) = (vec![], vec![], vec![], vec![]);
    let mut report = first;
    for k in 1..=o.runs {
        let s = run.run(out, &format!("defaults-{k}"));
        report = assert_clean(&s, "dry run (defaults)");
        let c = floor.run(out, &format!("curl-manifests-{k}"));
        assert_eq!(c.code, 0, "curl: {}", c.stderr());
        walls.push(s.wall);
        rss.push(mib(s.maxrss));
        floors.push(c.wall);
        ratios.push(s.wall / c.wall);
    }
    t.section("dry run, defaults (platform check on): the same apps and repositories");
    t.info("wall", &spread(&walls, 2, " s"));
    let floor = (
        "floor: tag lists, then the manifests read, curl --parallel",
        "its floor",
    );
    floor_rows(t, floor, (&floors, &ratios), &rss);
    let (pages, tokens, got, _blobs, retries) = requests(&report);
    t.check(
        "HTTP requests",
        &requests_text(&report),
        &format!(
            "{} tag lists, ≤ {} manifests (distinct current and chosen tags)",
            used.len(),
            manifests.len()
        ),
        pages == used.len() as u64 && got <= manifests.len() as u64 && tokens == 0 && retries == 0,
        true,
    );
}

/// The rows a dry run against a floor shows: the floor (`label.0`), the ratio to it, run
/// by run (≤ 1.3×, named `label.1`), and the peak RSS (≤ 40 MiB).
fn floor_rows(t: &mut Table, label: (&str, &str), (floors, ratios): (&[f64], &[f64]), rss: &[f64]) {
    t.info(label.0, &spread(floors, 2, " s"));
    t.check(
        &format!("ratio to {} (run by run)", label.1),
        &spread(ratios, 2, "×"),
        "≤ 1.3×",
        median(ratios) <= 1.3,
        true,
    );
    t.check(
        "peak RSS",
        &spread(rss, 1, " MiB"),
        "≤ 40 MiB",
        median(rss) <= 40.0,
        true,
    );
}

/// The distinct (repository path, tag) pairs of a report's updates, old and new.
fn read_manifests(report: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for u in report["updates"].as_array().into_iter().flatten() {
        let image = u["image"].as_str().unwrap_or_default();
        let path = image.split_once('/').map_or(image, |(_, p)| p);
        for side in ["from", "to"] {
            if let Some(tag) = u[side].as_str() {
                out.insert((path.to_string(), tag.to_string()));
            }
        }
    }
    out
}

/// `curl --parallel` over the tag lists of `used`, then a GET of each manifest (not
/// `fail`: a current tag the registry lacks answers 404 to the run as to curl).
fn manifests_floor(
    reg: &registry::Registry,
    used: &BTreeSet<usize>,
    manifests: &BTreeSet<(String, String)>,
    out: &Path,
) -> Job {
    let paths = (manifests.iter()).map(|(path, tag)| format!("{path}/manifests/{tag}"));
    lists_then_manifests(reg, used, "", paths, &out.join("curl-manifests.cfg"))
}

/// A `curl --parallel` job: the tag lists of `used`, then each of `paths` (under `/v2/`)
/// with imagebump's manifest Accept header and `options` (`head` for HEADs).
fn lists_then_manifests(
    reg: &registry::Registry,
    used: &BTreeSet<usize>,
    options: &str,
    paths: impl Iterator<Item = String>,
    file: &Path,
) -> Job {
    let cert = reg.cert.display().to_string();
    let mut lines = format!("cacert = \"{cert}\"\nfail\n");
    for &i in used {
        lines.push_str(&format!(
            "url = \"{}/v2/{}/tags/list?n=1000\"\noutput = \"/dev/null\"\n",
            reg.base_url(),
            registry::repo_name(i)
        ));
    }
    lines.push_str(&format!(
        "next\ncacert = \"{cert}\"\n{options}header = \"Accept: {MANIFEST_TYPES}\"\n"
    ));
    for path in paths {
        lines.push_str(&format!(
            "url = \"{}/v2/{path}\"\noutput = \"/dev/null\"\n",
            reg.base_url()
        ));
    }
    fs::write(file, lines).unwrap();
    Job::new("curl")
        .arg("-sS")
        .arg("--parallel")
        .arg("-K")
        .arg(file)
}

/// Renovate 44 over a git copy of `dir`, with ../shared/bench/renovate.sh: wall seconds and
/// peak RSS in MiB, or why it could not run.
fn renovate(dir: &Path, cert: &Path, out: &Path) -> Result<(f64, f64), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/renovate.sh");
    if !script.is_file() {
        return Err("../shared/bench/renovate.sh is not there".into());
    }
    eprintln!("Renovate over the same 1,000 apps (installs Node and Renovate on first use)…");
    let copy = out.join("renovate-repo");
    let _ = fs::remove_dir_all(&copy);
    let status = Command::new("cp").arg("-r").arg(dir).arg(&copy).status();
    if !status.is_ok_and(|s| s.success()) {
        return Err("cannot copy the repository".into());
    }
    git(&copy, &["init", "-q", "-b", "main"]);
    git(&copy, &["add", "-A"]);
    git(&copy, &["commit", "-qm", "fixture"]);
    let s = Job::new("bash")
        .arg(&script)
        .arg(&copy)
        .arg(cert)
        .arg(out.join("renovate.log"))
        .run(out, "renovate");
    if s.code != 0 {
        return Err(format!(
            "renovate.sh exited {} (no internet for npm?), see {}",
            s.code,
            out.join("renovate.log").display()
        ));
    }
    Ok((s.wall, mib(s.maxrss)))
}

/// `newest-build` over the dated `build-N` tags of every repository.
#[allow(clippy::too_many_arguments)]
fn newest_build(
    b: &Bench,
    o: &Opts,
    w: &Workload,
    reg: &registry::Registry,
    dir: &Path,
    cfg: &Path,
    used: &BTreeSet<usize>,
    out: &Path,
    t: &mut Table,
) {
    eprintln!("dry run (newest-build), {} runs…", o.build_runs);
    let run = b.dry_run(dir, cfg);
    let (mut walls, mut rss) = (vec![], vec![]);
    let mut report = Value::Null;
    for k in 0..=o.build_runs {
        let s = run.run(out, &format!("newest-{k}"));
        report = assert_clean(&s, "dry run (newest-build)");
        if k > 0 {
            walls.push(s.wall);
            rss.push(mib(s.maxrss));
        }
    }
    // Every build tag is a candidate (allowTags selects them, the current one included),
    // and each is an image of its own: one config per candidate too.
    let candidates = (used.len() * w.shape.dated) as u64;
    let distinct_configs = candidates;
    let (pages, tokens, manifests, blobs, retries) = requests(&report);
    t.section(&format!(
        "dry run, newest-build: allowTags selects {} dated tags per repository",
        w.shape.dated
    ));
    t.info("wall", &spread(&walls, 2, " s"));
    t.info("peak RSS", &spread(&rss, 1, " MiB"));
    t.check(
        "HTTP requests",
        &requests_text(&report),
        &format!(
            "{} tag lists; manifests ≤ {candidates} candidates; blobs ≤ {distinct_configs} configs",
            used.len()
        ),
        pages == used.len() as u64
            && manifests <= candidates
            && blobs <= distinct_configs
            && tokens == 0
            && retries == 0,
        true,
    );
    let updates = report["counts"]["updates"].as_u64().unwrap_or(0);
    t.info(
        "updates found",
        &format!("{updates} of {} references", w.apps * w.per_app),
    );
    cached_builds(b, o, reg, dir, cfg, used, candidates, &report, out, t);
}

/// newest-build with `--cache-dir`: a cold run (an empty cache) and warm runs, each warm
/// run in turn with the floor of its own requests (the tag lists and a HEAD per candidate,
/// curl --parallel). The answer must be the one of the run without the cache.
#[allow(clippy::too_many_arguments)]
fn cached_builds(
    b: &Bench,
    o: &Opts,
    reg: &registry::Registry,
    dir: &Path,
    cfg: &Path,
    used: &BTreeSet<usize>,
    candidates: u64,
    uncached: &Value,
    out: &Path,
    t: &mut Table,
) {
    eprintln!(
        "dry run (newest-build) with --cache-dir: cold, then {} warm runs…",
        o.build_runs
    );
    let cache = out.join("metadata-cache");
    let _ = fs::remove_dir_all(&cache);
    let mut run = b.dry_run(dir, cfg);
    run = run.arg("--cache-dir").arg(&cache);
    let cold = run.run(out, "newest-cold");
    let cold_report = assert_clean(&cold, "dry run (newest-build, cold cache)");
    let same = |r: &Value| r["updates"] == uncached["updates"] && r["counts"] == uncached["counts"];
    let floor = curl_floor(reg, used, b, out);
    let (mut walls, mut floors, mut ratios) = (vec![], vec![], vec![]);
    let mut warm = Value::Null;
    for k in 0..=o.build_runs {
        let s = run.run(out, &format!("newest-warm-{k}"));
        warm = assert_clean(&s, "dry run (newest-build, warm cache)");
        let c = floor.run(out, &format!("curl-heads-{k}"));
        assert_eq!(c.code, 0, "curl: {}", c.stderr());
        if k > 0 {
            walls.push(s.wall);
            floors.push(c.wall);
            ratios.push(s.wall / c.wall);
        }
    }
    let (pages, _, manifests, blobs, _) = requests(&cold_report);
    t.check(
        "cold cache: HTTP requests",
        &requests_text(&cold_report),
        &format!("≤ {candidates} candidates + distinct configs"),
        pages == used.len() as u64
            && manifests <= candidates
            && blobs <= candidates
            && same(&cold_report),
        true,
    );
    t.info("warm cache: wall", &spread(&walls, 2, " s"));
    t.info(
        "floor: tag lists + a HEAD per candidate, curl --parallel",
        &spread(&floors, 2, " s"),
    );
    t.check(
        "warm cache: ratio to its floor (run by run)",
        &spread(&ratios, 2, "×"),
        "≤ 2×",
        median(&ratios) <= 2.0,
        true,
    );
    let (pages, tokens, manifests, blobs, retries) = requests(&warm);
    t.check(
        "warm cache: HTTP requests",
        &requests_text(&warm),
        &format!(
            "{} tag lists, {candidates} HEADs, 0 blobs, same answer",
            used.len()
        ),
        pages == used.len() as u64
            && manifests == candidates
            && blobs == 0
            && tokens == 0
            && retries == 0
            && same(&warm),
        true,
    );
}

/// `curl --parallel` over the requests a warm newest-build run makes: every tag list, then
/// a HEAD of every candidate's manifest (the Accept header imagebump sends).
fn curl_floor(reg: &registry::Registry, used: &BTreeSet<usize>, b: &Bench, out: &Path) -> Job {
    let paths = used.iter().flat_map(|&i| {
        (1..=b.dated).map(move |n| format!("{}/manifests/build-{n}", registry::repo_name(i)))
    });
    lists_then_manifests(
        reg,
        used,
        "fail\nhead\n",
        paths,
        &out.join("curl-heads.cfg"),
    )
}

/// The media types imagebump asks manifests in (src/registry/client.rs).
const MANIFEST_TYPES: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.v2+json";

/// The cores this machine runs on (the registry's and imagebump's together).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// 10x the apps over the same repositories, in turn with the 1x repository. Each run's CPU
/// and the registry's CPU meanwhile are shown too: on a machine whose cores the registry
/// shares, the larger run cannot take less wall time than all that CPU spread over every
/// core, which bounds the time ratio from below.
#[allow(clippy::too_many_arguments)]
fn scaling(
    b: &Bench,
    o: &Opts,
    w: &Workload,
    reg: &registry::Registry,
    one_dir: &Path,
    cfg: &Path,
    out: &Path,
    t: &mut Table,
) {
    let apps = w.apps * w.scale;
    eprintln!("generating {apps} apps…");
    let dir = b.work.join("semver-10x");
    let used = repo::generate(
        &dir,
        &reg.host(),
        apps,
        w.shape.repos,
        w.per_app,
        Current::Versions,
    );
    eprintln!(
        "dry run over {apps} apps, {} runs (in turn with 1x)…",
        o.runs
    );
    let big = b.dry_run(&dir, cfg);
    let small = b.dry_run(one_dir, cfg);
    let (mut walls, mut rss, mut ratios, mut rss_ratios) = (vec![], vec![], vec![], vec![]);
    let (mut cpu, mut floors) = ((vec![], vec![], vec![], vec![]), vec![]);
    let mut report = Value::Null;
    for k in 0..=o.runs {
        let start = reg.cpu();
        let s = big.run(out, &format!("scale-{k}"));
        let between = reg.cpu();
        report = assert_clean(&s, "dry run (10x)");
        let one = small.run(out, &format!("scale-1x-{k}"));
        let (registry_big, registry_one) = (between - start, reg.cpu() - between);
        assert_clean(&one, "dry run (1x)");
        if k > 0 {
            walls.push(s.wall);
            rss.push(mib(s.maxrss));
            ratios.push(s.wall / one.wall);
            rss_ratios.push(s.maxrss as f64 / one.maxrss.max(1) as f64);
            cpu.0.push(s.cpu);
            cpu.1.push(registry_big);
            cpu.2.push(one.cpu);
            cpu.3.push(registry_one);
            floors.push((s.cpu + registry_big) / cores() as f64 / one.wall);
        }
    }
    let (pages, _, manifests, blobs, _) = requests(&report);
    t.section(&format!(
        "scaling: {apps} apps, {} references, same {} repositories",
        apps * w.per_app,
        used.len()
    ));
    t.info("wall", &spread(&walls, 2, " s"));
    t.check(
        "time ratio to 1x (run by run)",
        &spread(&ratios, 2, "×"),
        "≤ 1.5×",
        median(&ratios) <= 1.5,
        true,
    );
    t.info(
        "CPU, imagebump + registry: 10x",
        &format!("{:.2} + {:.2} s", median(&cpu.0), median(&cpu.1)),
    );
    t.info(
        "CPU, imagebump + registry: 1x",
        &format!("{:.2} + {:.2} s", median(&cpu.2), median(&cpu.3)),
    );
    t.info(
        &format!(
            "time ratio's floor (10x CPU over {} cores / 1x wall)",
            cores()
        ),
        &spread(&floors, 2, "×"),
    );
    t.check(
        "peak RSS",
        &spread(&rss, 1, " MiB"),
        "≤ 64 MiB",
        median(&rss) <= 64.0,
        true,
    );
    t.info(
        "peak RSS ratio to 1x (run by run)",
        &spread(&rss_ratios, 2, "×"),
    );
    t.check(
        "HTTP requests",
        &requests_text(&report),
        &format!("{} tag lists, 0 manifests", used.len()),
        pages == used.len() as u64 && manifests == 0 && blobs == 0,
        true,
    );
}

/// Pull-request mode against a bare repository over `file://`, the forge a GitHub fake.
fn pull_requests(
    b: &Bench,
    o: &Opts,
    w: &Workload,
    host: &str,
    cfg: &Path,
    out: &Path,
    t: &mut Table,
) {
    let sets = w.change_sets;
    eprintln!("pull-request mode: {sets} change sets, {} runs…", o.pr_runs);
    let src = b.work.join("pr-src");
    // One app per change set (the default grouping is by app directory).
    repo::generate(
        &src,
        host,
        sets,
        w.shape.repos,
        w.per_app,
        Current::Versions,
    );
    git(&src, &["init", "-q", "-b", "main"]);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-qm", "fixture"]);
    let pristine = b.work.join("pristine.git");
    git(
        &b.work,
        &[
            "clone",
            "-q",
            "--bare",
            "--no-local",
            "pr-src",
            "pristine.git",
        ],
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    // The same runs with the clone on a memory file system, when the machine has one: the
    // clone writes the whole work tree, and on a disk that tests and benchmarks keep filling
    // and emptying, creating those files is most of the run (docs/performance.md).
    let shm = tempfile::Builder::new()
        .prefix("imagebump-bench-")
        .tempdir_in("/dev/shm")
        .ok();
    let ctx = PrContext {
        b,
        opts: o,
        rt: &rt,
        pristine: &pristine,
        cfg,
        out,
        sets,
    };
    let (mut disk, mut memory) = (Vec::new(), Vec::new());
    for k in 0..=o.pr_runs {
        let run = ctx.run(&format!("pr-{k}"), None);
        let in_memory = shm
            .as_ref()
            .map(|d| ctx.run(&format!("pr-shm-{k}"), Some(d.path())));
        // The first run of each is a warm-up.
        if k > 0 {
            disk.push(run);
            memory.extend(in_memory);
        }
    }
    let col = |runs: &[PrRun], f: fn(&PrRun) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
    let pushes_at = col(&disk, |r| r.pushed);
    t.section(&format!(
        "pull-request mode: {sets} change sets from one base, one push (file:// remote)"
    ));
    t.check(
        "start → push done (clone, registry, plan, commits, push)",
        &spread(&pushes_at, 2, " s"),
        "≤ 1 s",
        median(&pushes_at) <= 1.0,
        true,
    );
    t.info(
        "  of which: plan done → push done (release facts, commits, push)",
        &spread(&col(&disk, |r| r.pushed - r.planned), 2, " s"),
    );
    t.info(
        "  of which: the remote writing the branches (pre- → post-receive)",
        &spread(&col(&disk, |r| r.pushed - r.received), 2, " s"),
    );
    if !memory.is_empty() {
        t.info(
            "  the same with the clone on tmpfs (TMPDIR=/dev/shm)",
            &spread(&col(&memory, |r| r.pushed), 2, " s"),
        );
    }
    t.info(
        "forge calls after the push (fake answers at once)",
        &spread(&col(&disk, |r| r.wall - r.pushed), 2, " s"),
    );
    t.info("whole run", &spread(&col(&disk, |r| r.wall), 2, " s"));
    t.info(
        "peak RSS (largest process)",
        &spread(&col(&disk, |r| r.rss), 1, " MiB"),
    );
    let summary = disk.last().map(|r| r.summary.clone()).unwrap_or_default();
    t.info("result", &summary);
}

/// What every pull-request run is made with.
struct PrContext<'a> {
    b: &'a Bench,
    opts: &'a Opts,
    rt: &'a tokio::runtime::Runtime,
    pristine: &'a Path,
    cfg: &'a Path,
    out: &'a Path,
    sets: usize,
}

/// One pull-request run, in seconds from its start.
struct PrRun {
    wall: f64,
    pushed: f64,
    /// The remote had the pack and was about to write the refs.
    received: f64,
    planned: f64,
    rss: f64,
    summary: String,
}

impl PrContext<'_> {
    /// A run against a fresh copy of the pristine remote (a hook stamps the push), with
    /// its clone in `tmpdir` when given; checked to have pushed once and opened every pull
    /// request.
    fn run(&self, name: &str, tmpdir: Option<&Path>) -> PrRun {
        let b = self.b;
        let remote = b.work.join(format!("remote-{name}.git"));
        let status = Command::new("cp")
            .arg("-a")
            .arg(self.pristine)
            .arg(&remote)
            .status()
            .expect("cp");
        assert!(status.success());
        let stamps = b.work.join(format!("pushed-{name}"));
        // The remote stamps the time its refs are written (post-receive) and, to tell its
        // own share, the time the pack was in and checked, before any ref (pre-receive).
        let received = b.work.join(format!("received-{name}"));
        use std::os::unix::fs::PermissionsExt;
        for (hook, file) in [("post-receive", &stamps), ("pre-receive", &received)] {
            let hook = remote.join("hooks").join(hook);
            fs::write(
                &hook,
                format!(
                    "#!/bin/sh\ncat >/dev/null\ndate +%s.%N >> '{}'\n",
                    file.display()
                ),
            )
            .unwrap();
            fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
        }

        let fake = self.rt.block_on(github::FakeGitHub::start());
        let url = format!("file://{}", remote.display());
        let repo = format!("{}/{}", github::FakeGitHub::OWNER, github::FakeGitHub::REPO);
        let api = fake.api_url();
        let mut job = b
            .imagebump(&[
                "run",
                &url,
                "--config",
                &self.cfg.to_string_lossy(),
                "--forge",
                "github",
                "--forge-url",
                &api,
                "--forge-repo",
                &repo,
                "--output",
                "json",
                "-v",
                "--log-format",
                "json",
            ])
            .env("GITHUB_TOKEN", github::FakeGitHub::TOKEN);
        if let Some(dir) = tmpdir {
            job = job.env("TMPDIR", dir);
        }
        if let Some(filter) = &self.opts.pr_log {
            job = job.env("IMAGEBUMP_LOG", filter);
        }
        if let Some((program, wrap)) = self.opts.pr_wrap.split_first() {
            let bin = std::mem::replace(&mut job.program, PathBuf::from(program));
            let args = std::mem::take(&mut job.args);
            job.args = wrap.iter().map(Into::into).collect();
            job.args.push(bin.into());
            job.args.extend(args);
        }
        let s = job.run(self.out, name);
        let report = assert_clean(&s, "pull-request mode");
        let stamps = fs::read_to_string(&stamps).unwrap_or_default();
        let stamps: Vec<f64> = stamps.lines().filter_map(|l| l.parse().ok()).collect();
        let started = s
            .started
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let pushed = stamps.first().map_or(f64::NAN, |p| p - started);
        let received = fs::read_to_string(&received).unwrap_or_default();
        let received = received
            .lines()
            .find_map(|l| l.parse::<f64>().ok())
            .map_or(f64::NAN, |p| p - started);
        let planned = log_time(&s.stderr(), "planned").map_or(f64::NAN, |p| p - started);
        let created = report["pullRequests"]
            .as_array()
            .map_or(0, |p| p.iter().filter(|p| p["action"] == "create").count());
        let branches = git(
            &remote,
            &["for-each-ref", "--format=%(refname)", "refs/heads/"],
        )
        .lines()
        .count()
            - 1;
        let calls = self.rt.block_on(async {
            let n = fake.calls().len();
            drop(fake);
            n
        });
        let summary = format!(
            "{created} pull requests created, {branches} branches, {} push(es), {calls} forge calls",
            stamps.len()
        );
        assert_eq!(stamps.len(), 1, "exactly one push: {summary}");
        assert_eq!(created, self.sets, "{summary}");
        assert_eq!(branches, self.sets, "{summary}");
        PrRun {
            wall: s.wall,
            pushed,
            received,
            planned,
            rss: mib(s.maxrss),
            summary,
        }
    }
}

/// The time (seconds since the epoch) of the JSON log event whose message is `message`.
fn log_time(stderr: &str, message: &str) -> Option<f64> {
    stderr.lines().find_map(|l| {
        let v: Value = serde_json::from_str(l).ok()?;
        if v["message"] != message {
            return None;
        }
        let ts: jiff::Timestamp = v["timestamp"].as_str()?.parse().ok()?;
        Some(ts.as_microsecond() as f64 / 1e6)
    })
}
