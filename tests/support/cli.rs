//! The one way integration tests run the `imagebump` binary (zizmor's `zizmor()` builder).
//!
//! ```ignore
//! let run = imagebump()
//!     .args(["run", "--dry-run"])
//!     .arg(dir)
//!     .env("IMAGEBUMP_EXIT_CODE", "true")
//!     .code(3)
//!     .run();
//! insta::assert_snapshot!(run.filtered_stdout());
//! ```
//!
//! * **A scrubbed environment.** The child starts from `env_clear()` and gets only `PATH`,
//!   `TMPDIR` (when set), `NO_COLOR=1`, a private `HOME` and a private `DOCKER_CONFIG`
//!   (an empty directory unless the test writes a `config.json` there). Nothing from the
//!   developer's shell (`IMAGEBUMP_*`, `GITHUB_*`, `GITLAB_*`, `GITEA_*`, `CI`, `DOCKER_CONFIG`,
//!   `RUST_LOG`, cloud credentials, proxies) reaches it; a test adds what it means with
//!   [`Cli::env`].
//! * **The expected exit code** ([`Cli::code`], 0 unless told) is asserted by [`Cli::run`],
//!   with the command, its explicit environment and the full stdout and stderr in the message.
//! * **Output filters**: loopback ports, the run's private directories, temp paths and
//!   durations, plus any the test adds ([`Cli::filter`]), applied by [`Run::filtered_stdout`]
//!   and [`Run::filtered_stderr`] for insta snapshots and exact comparisons.
#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use regex::Regex;

/// Variables copied from the test's own environment: what the binary needs to find programs
/// and a place for temp files, nothing that configures it. `LLVM_PROFILE_FILE` lets coverage
/// builds write their profiles.
pub const INHERITED: [&str; 3] = ["PATH", "TMPDIR", "LLVM_PROFILE_FILE"];

/// The builder for one run of `imagebump` (or, with [`Cli::program`], of another program in
/// the same scrubbed environment).
pub struct Cli {
    cmd: Command,
    program: String,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    code: Option<i32>,
    timeout: Option<Duration>,
    /// Measure the run's peak RSS (GNU time's `%M`).
    measure_memory: bool,
    stdin: Option<Vec<u8>>,
    filters: Vec<(Regex, String)>,
    home: PathBuf,
    docker_config: PathBuf,
    // Kept alive until the run ends.
    _private: Arc<tempfile::TempDir>,
}

/// `imagebump` with a scrubbed environment, expecting exit code 0.
pub fn imagebump() -> Cli {
    Cli::program(env!("CARGO_BIN_EXE_imagebump"))
}

/// `imagebump run --dry-run DIR --config CONFIG`, expecting exit code 0 (set another with
/// [`Cli::code`]).
pub fn dry_run(dir: impl AsRef<OsStr>, config: impl AsRef<OsStr>) -> Cli {
    imagebump()
        .args(["run", "--dry-run"])
        .arg(dir)
        .arg("--config")
        .arg(config)
}

impl Cli {
    /// Any program, in the same scrubbed environment as [`imagebump`] (e.g. `/bin/sh` running
    /// the GitHub Action's entrypoint, which calls imagebump).
    pub fn program(program: impl AsRef<OsStr>) -> Cli {
        let private = tempfile::Builder::new()
            .prefix("imagebump-cli-")
            .tempdir()
            .expect("create the run's private directory");
        let home = private.path().join("home");
        let docker_config = private.path().join("docker");
        std::fs::create_dir_all(&home).expect("create the private HOME");
        std::fs::create_dir_all(&docker_config).expect("create the private DOCKER_CONFIG");
        let mut cmd = Command::new(program.as_ref());
        cmd.env_clear();
        for var in INHERITED {
            if let Some(value) = std::env::var_os(var) {
                cmd.env(var, value);
            }
        }
        cmd.env("HOME", &home)
            .env("DOCKER_CONFIG", &docker_config)
            .env("NO_COLOR", "1");
        let mut cli = Cli {
            cmd,
            program: program.as_ref().to_string_lossy().into_owned(),
            args: Vec::new(),
            env: Vec::new(),
            code: Some(0),
            timeout: None,
            measure_memory: false,
            stdin: None,
            filters: Vec::new(),
            home: home.clone(),
            docker_config: docker_config.clone(),
            _private: Arc::new(private),
        };
        cli = cli.filter(
            &regex::escape(&docker_config.to_string_lossy()),
            "[DOCKER_CONFIG]",
        );
        cli.filter(&regex::escape(&home.to_string_lossy()), "[HOME]")
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Cli {
        self.cmd.arg(arg.as_ref());
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Cli
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    /// One variable the test means the binary to see.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Cli {
        self.cmd.env(key.as_ref(), value.as_ref());
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    pub fn envs<I, K, V>(mut self, vars: I) -> Cli
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    /// Takes one of the scrubbed defaults away (e.g. `DOCKER_CONFIG`, so that the binary
    /// looks in `$HOME/.docker`).
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Cli {
        self.cmd.env_remove(key.as_ref());
        self.env.retain(|(k, _)| k != key.as_ref());
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Cli {
        self.cmd.current_dir(dir);
        self
    }

    /// Points `HOME` at a directory the test owns instead of the private one.
    pub fn home(self, dir: impl AsRef<Path>) -> Cli {
        let dir = dir.as_ref().to_path_buf();
        let cli = self.env("HOME", &dir);
        cli.filter(&regex::escape(&dir.to_string_lossy()), "[HOME]")
    }

    /// Points `DOCKER_CONFIG` at a directory the test owns instead of the private one.
    pub fn docker_config_dir(self, dir: impl AsRef<Path>) -> Cli {
        let dir = dir.as_ref().to_path_buf();
        let cli = self.env("DOCKER_CONFIG", &dir);
        cli.filter(&regex::escape(&dir.to_string_lossy()), "[DOCKER_CONFIG]")
    }

    /// Writes `json` as `config.json` of the run's private Docker config.
    pub fn docker_config(self, json: &str) -> Cli {
        std::fs::write(self.docker_config.join("config.json"), json)
            .expect("write the private docker config.json");
        self
    }

    /// The run's private `HOME` (a fresh, empty directory).
    pub fn home_dir(&self) -> &Path {
        &self.home
    }

    /// The run's private `DOCKER_CONFIG` directory.
    pub fn docker_config_path(&self) -> &Path {
        &self.docker_config
    }

    /// The exit code [`Cli::run`] asserts (0 unless told).
    pub fn code(mut self, code: i32) -> Cli {
        self.code = Some(code);
        self
    }

    /// Any exit code is fine: the test asserts on the returned [`Run`] itself (for example a
    /// table whose rows expect different codes and say why in their own message).
    pub fn any_code(mut self) -> Cli {
        self.code = None;
        self
    }

    /// Kills the run after `limit` (the test then fails, saying it hung).
    pub fn timeout(mut self, limit: Duration) -> Cli {
        self.timeout = Some(limit);
        self
    }

    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Cli {
        self.stdin = Some(bytes.into());
        self
    }

    /// Replaces every match of `pattern` (a regex) by `replacement` in the filtered output.
    /// Filters apply in the order given, the test's own first, then the defaults.
    pub fn filter(mut self, pattern: &str, replacement: &str) -> Cli {
        let re = Regex::new(pattern).unwrap_or_else(|e| panic!("bad filter {pattern:?}: {e}"));
        self.filters.insert(0, (re, replacement.to_string()));
        self
    }

    /// Replaces a literal path (a fixture or temp directory) by `name` in the filtered output.
    pub fn filter_path(self, path: impl AsRef<Path>, name: &str) -> Cli {
        let text = path.as_ref().to_string_lossy().into_owned();
        self.filter(&regex::escape(&text), name)
    }

    /// The command as it will run (for tests of the harness itself).
    pub fn command(&self) -> &Command {
        &self.cmd
    }

    /// Runs to the end and asserts the expected exit code.
    /// Record the run's peak resident memory in [`Run::peak_kib`] (through GNU time).
    pub fn measure_memory(mut self) -> Cli {
        self.measure_memory = true;
        self
    }

    pub fn run(self) -> Run {
        let Cli {
            mut cmd,
            program,
            args,
            env,
            code: expected,
            timeout,
            stdin,
            mut filters,
            measure_memory,
            _private,
            ..
        } = self;
        filters.extend(default_filters());
        let peak_file = _private.path().join("peak-rss");
        if measure_memory {
            cmd = under_time(&cmd, &peak_file);
        }
        cmd.stdin(Stdio::null());
        let mut cmd = assert_cmd::Command::from_std(cmd);
        if let Some(limit) = timeout {
            cmd.timeout(limit);
        }
        if let Some(bytes) = stdin {
            cmd.write_stdin(bytes);
        }
        let started = Instant::now();
        let output = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        let run = Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            elapsed: started.elapsed(),
            peak_kib: measure_memory.then(|| peak_of(&peak_file)),
            command: describe(&program, &args, &env),
            filters: Arc::new(filters),
            _private,
        };
        if output.status.code().is_none() {
            panic!("killed ({}; hung past {timeout:?}?)\n{run}", output.status);
        }
        if let Some(expected) = expected {
            assert!(
                run.code == expected,
                "expected exit code {expected}, got {}\n{run}",
                run.code
            );
        }
        run
    }

    /// [`Cli::run`] on a blocking thread, so that servers on the test's tokio runtime (mocks,
    /// fakes) keep answering while the binary runs.
    pub async fn run_async(self) -> Run {
        match tokio::task::spawn_blocking(move || self.run()).await {
            Ok(run) => run,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

/// `cmd` run by GNU time, which writes the peak RSS (KiB) to `out`; same environment and
/// directory.
fn under_time(cmd: &Command, out: &Path) -> Command {
    super::require_tool("time", "time");
    let mut timed = Command::new("time");
    timed
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(out)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .env_clear();
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    timed
}

fn peak_of(file: &Path) -> u64 {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.trim().parse().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no peak RSS from GNU time: {text:?}"))
}

fn describe(program: &str, args: &[OsString], env: &[(OsString, OsString)]) -> String {
    let mut line = String::new();
    for (k, v) in env {
        line.push_str(&format!("{}={} ", k.to_string_lossy(), v.to_string_lossy()));
    }
    line.push_str(program);
    for a in args {
        line.push(' ');
        line.push_str(&a.to_string_lossy());
    }
    line
}

/// Loopback ports, temp paths and durations: what differs from one run to the next.
fn default_filters() -> Vec<(Regex, String)> {
    let tmp = std::env::temp_dir();
    let tmp = regex::escape(tmp.to_string_lossy().trim_end_matches('/'));
    [
        (format!(r"{tmp}/[^\s/'`]+"), "[TMP]"),
        (
            r"(127\.0\.0\.1|localhost|\[::1\]):\d+".to_string(),
            "$1:[PORT]",
        ),
        (r"\b\d+(\.\d+)?(ns|µs|us|ms|s)\b".to_string(), "[DURATION]"),
    ]
    .into_iter()
    .map(|(p, r)| (Regex::new(&p).expect("default filter"), r.to_string()))
    .collect()
}

/// One finished run: exit code, full output, and how long it took.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// Peak resident memory in KiB, with [`Cli::measure_memory`].
    pub peak_kib: Option<u64>,
    /// The command line with the explicit environment, for failure messages.
    pub command: String,
    filters: Arc<Vec<(Regex, String)>>,
    _private: Arc<tempfile::TempDir>,
}

impl Run {
    /// stdout with the filters applied.
    pub fn filtered_stdout(&self) -> String {
        self.apply(&self.stdout)
    }

    /// stderr with the filters applied.
    pub fn filtered_stderr(&self) -> String {
        self.apply(&self.stderr)
    }

    /// Exit code, stdout and stderr, filtered: one text for a snapshot.
    pub fn filtered(&self) -> String {
        format!(
            "exit code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
            self.code,
            self.filtered_stdout(),
            self.filtered_stderr()
        )
    }

    fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (re, replacement) in self.filters.iter() {
            out = re.replace_all(&out, replacement.as_str()).into_owned();
        }
        out
    }

    /// stdout parsed as JSON (panics with the whole run when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{self}"))
    }

    /// Asserts that stdout contains `needle`, failing with the whole run.
    pub fn assert_stdout_contains(&self, needle: &str) -> &Run {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}\n{self}"
        );
        self
    }

    /// Asserts that stderr contains `needle`, failing with the whole run.
    pub fn assert_stderr_contains(&self, needle: &str) -> &Run {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{self}"
        );
        self
    }

    /// Asserts the exit code (for runs made with [`Cli::any_code`]).
    pub fn assert_code(&self, expected: i32, context: &str) -> &Run {
        assert!(
            self.code == expected,
            "{context}: expected exit code {expected}, got {}\n{self}",
            self.code
        );
        self
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "$ {}\nexit code {} after {:?}\n----- stdout -----\n{}\n----- stderr -----\n{}",
            self.command, self.code, self.elapsed, self.stdout, self.stderr
        )
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}
