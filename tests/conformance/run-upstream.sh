#!/usr/bin/env bash
# Runs sigstore-conformance's own test runner (vendored in runner/) against
# `imagebump verify-bundle`: the suite's bundle-verification cases, offline.
#
#   tests/conformance/run-upstream.sh [IMAGEBUMP]
#
# IMAGEBUMP is the binary to test (target/debug/imagebump by default). The runner's Python
# requirements (runner/requirements.txt, hash-pinned) come from PyPI into a temporary
# virtual environment, or from the one named by CONFORMANCE_VENV. Signing tests are
# skipped: imagebump does not sign. SUITE=DIR runs another checkout of the suite instead of
# the vendored one (to try a newer commit before refreshing runner/ and bundle-verify/).
# XFAIL names the cases expected to fail (fnmatch patterns, the suite's own mechanism);
# PYTEST_ARGS passes more arguments to pytest.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/target/debug/imagebump}
[[ -x $bin ]] || { echo "$bin: not an executable (build it first: cargo build)" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
suite=$(cd "${SUITE:-$here/runner}" && pwd)

venv=${CONFORMANCE_VENV:-}
if [[ -z $venv ]]; then
    venv=$(mktemp -d)
    trap 'rm -rf "$venv"' EXIT
fi
if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes \
        --requirement "$suite/requirements.txt"
fi

cd "$suite"
# The cpython-release cases need a checkout that only the suite's GitHub Action makes.
unset GITHUB_WORKSPACE
export GHA_SIGSTORE_CONFORMANCE_XFAIL=${XFAIL:-}
# shellcheck disable=SC2086
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$here" "$venv/bin/python" -m pytest test/test_bundle.py \
    -p offline_token -p no:cacheprovider -k "test_verify and not cpython" \
    --skip-signing --entrypoint="$bin" ${PYTEST_ARGS:-}
