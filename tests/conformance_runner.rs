//! sigstore-conformance's own runner, pointed at `imagebump verify-bundle`.
//!
//! `tests/conformance/runner/` is the suite's pytest runner (its `test/` code and hash-pinned
//! `requirements.txt`, Apache-2.0, unmodified; tests/conformance/NOTICE.md), with the
//! vendored bundle cases as its assets. `tests/conformance/run-upstream.sh` runs its
//! `test_verify` cases, PATH and DIGEST, offline (`offline_token.py` answers the one token
//! download the runner makes for every test) with the suite's strict-xfail mechanism for
//! [`XFAIL`]. tests/conformance.rs checks each refusal's reason; this test checks that the
//! suite's own code, reading the same files, reaches the same verdicts.
//!
//! `.ci/run` prepares the runner's virtual environment in `target/ci-conformance`; without
//! it the script builds a temporary one from PyPI.

#![allow(clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

/// The cases `verify-bundle` does not pass yet.
const XFAIL: &[&str] = &[];

/// [`XFAIL`] as the suite's fnmatch patterns of test names, both modes; `[[]` is a literal `[`.
fn xfail_patterns() -> Vec<String> {
    let modes = ["PATH", "DIGEST"];
    (XFAIL.iter())
        .flat_map(|case| modes.map(|mode| format!("test_verify[[]{mode}-{case}]")))
        .collect()
}

#[test]
fn the_suites_own_runner_reaches_every_verdict() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut run = Command::new(root.join("tests/conformance/run-upstream.sh"));
    run.arg(env!("CARGO_BIN_EXE_imagebump"))
        .env("XFAIL", xfail_patterns().join(" "))
        .env_remove("PYTEST_ARGS")
        .env_remove("SUITE");
    let venv = root.join("target/ci-conformance");
    if venv.join("bin/python").exists() {
        run.env("CONFORMANCE_VENV", &venv);
    }
    let out = run.output().expect("run tests/conformance/run-upstream.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stdout.lines().last().unwrap_or_default();
    let expected = format!("{} passed", 140 - 2 * XFAIL.len());
    assert!(
        out.status.success() && summary.contains(&expected),
        "the suite's runner: {}, want {expected} and {} xfailed\n{stdout}\n{stderr}",
        out.status,
        2 * XFAIL.len(),
    );
}
