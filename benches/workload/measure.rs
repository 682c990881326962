//! Running a command as a whole process: wall time (from spawn to exit, measured here),
//! peak RSS (the kernel's `ru_maxrss` of the process, read through GNU time's `%M`) and the
//! CPU time it used (user and system, GNU time's `%U` and `%S`).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};

pub const GNU_TIME: &str = "/usr/bin/time";

/// One finished run.
#[derive(Debug, Clone)]
pub struct Sample {
    pub wall: f64,
    /// KiB.
    pub maxrss: u64,
    /// Seconds of CPU, user and system, of the process and the children it waited for.
    pub cpu: f64,
    pub code: i32,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    /// When the process was started (for comparing with timestamps it or others wrote).
    pub started: SystemTime,
}

impl Sample {
    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout()).unwrap_or_else(|e| {
            panic!(
                "not a JSON report ({e}); exit {}; stderr:\n{}",
                self.code,
                tail(&self.stderr(), 20)
            )
        })
    }
}

pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A command to time: program, arguments, environment changes, working directory.
pub struct Job {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, OsString)>,
    pub env_remove: Vec<String>,
}

impl Job {
    pub fn new(program: impl Into<PathBuf>) -> Job {
        Job {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
        }
    }

    pub fn arg(mut self, a: impl Into<OsString>) -> Job {
        self.args.push(a.into());
        self
    }

    pub fn env(mut self, k: &str, v: impl Into<OsString>) -> Job {
        self.env.push((k.to_string(), v.into()));
        self
    }

    /// Runs it once under GNU time, stdout and stderr to files in `out` named `name.*`.
    pub fn run(&self, out: &Path, name: &str) -> Sample {
        let stdout = out.join(format!("{name}.stdout"));
        let stderr = out.join(format!("{name}.stderr"));
        let rss = out.join(format!("{name}.rss"));
        let mut cmd = Command::new(GNU_TIME);
        cmd.arg("-f")
            .arg("maxrss=%M\ncpu=%U %S")
            .arg("-o")
            .arg(&rss)
            .arg(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&stdout).expect("create stdout file"))
            .stderr(fs::File::create(&stderr).expect("create stderr file"));
        for k in &self.env_remove {
            cmd.env_remove(k);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let started = SystemTime::now();
        let t0 = Instant::now();
        let status = cmd
            .status()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.program.display()));
        let wall = t0.elapsed().as_secs_f64();
        let timed = fs::read_to_string(&rss).unwrap_or_default();
        let field = |name: &str| timed.lines().find_map(|l| l.strip_prefix(name));
        let maxrss = field("maxrss=")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let cpu = field("cpu=")
            .map(|v| {
                v.split_whitespace()
                    .filter_map(|x| x.parse::<f64>().ok())
                    .sum()
            })
            .unwrap_or(0.0);
        Sample {
            wall,
            maxrss,
            cpu,
            code: status.code().unwrap_or(-1),
            stdout,
            stderr,
            started,
        }
    }
}

/// Median of `xs` (the mean of the middle two for an even count).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `median (min–max)` of `xs` with `unit` after each number, `digits` decimals.
pub fn spread(xs: &[f64], digits: usize, unit: &str) -> String {
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{:.digits$}{unit} ({min:.digits$}–{max:.digits$})",
        median(xs)
    )
}
