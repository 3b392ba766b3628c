#!/usr/bin/env bash
# Run every check of the project, the same way locally and in CI (.ci/run):
#
#   1. ruff check .            lint
#   2. ruff format --check .   formatting
#   3. lint-imports            layer contracts: eos_magics -> widgets -> engine; no Jupyter/Spark in engine
#   4. check-js                tsc --checkJs over widgets/**/*.js (scripts/check-js.sh; npm ci on first use)
#   5. pytest                  the whole suite, two workers (extra arguments are passed on: bash scripts/test.sh -x -k tidy)
#                              tests/browser needs /usr/bin/chromium: skipped without it, failed if CI=true
#
# Every step runs even if an earlier one failed, so one run reports everything; the exit status is
# non-zero if any step failed (pytest's "no tests collected", status 5, counts as a failure).
# Uses the tools in .venv; run scripts/setup.sh first.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
BIN="$ROOT/.venv/bin"

for tool in ruff lint-imports pytest; do
    if [ ! -x "$BIN/$tool" ]; then
        echo "test.sh: $BIN/$tool is missing; run: bash scripts/setup.sh" >&2
        exit 2
    fi
done

# The repository root first on the path, so the checks see this tree even before an install.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

failed=()
step() {
    local name="$1"
    shift
    echo "==> $name"
    "$@"
    local status=$?
    if [ "$status" -ne 0 ]; then
        echo "==> $name FAILED (exit $status)"
        failed+=("$name")
    fi
}

step "ruff check" "$BIN/ruff" check .
step "ruff format --check" "$BIN/ruff" format --check .
step "lint-imports" "$BIN/lint-imports"
step "check-js" bash "$ROOT/scripts/check-js.sh"
# Two workers (pytest-xdist; EOS_TEST_WORKERS=N to change, 0 for one process), each taking whole files
# so a module's Spark session or Kafka cluster starts once: much of the suite waits on wall-clock
# time (served clusters, JVMs, browsers), so a second worker pays even on 2 cores.
# --durations: the slowest tests, so each CI log says where its time went.
step "pytest" "$BIN/pytest" -n "${EOS_TEST_WORKERS:-2}" --dist loadfile --durations=60 --durations-min=3 "$@"

if [ "${#failed[@]}" -ne 0 ]; then
    echo "test.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "test.sh: all checks passed"
