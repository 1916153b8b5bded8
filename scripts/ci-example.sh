#!/usr/bin/env bash
# The steps of docs/ci.md's CI jobs, runnable locally: start the host under
# test, run goalpost quietly, publish report.md as the step summary, collect
# report.html and junit.xml, and gate on regressions against a baseline.
# suite/tests/it/ci_example.rs runs it against the bundled reference host.
#
# Environment (all optional):
#   GOALPOST            the goalpost binary                  [goalpost on PATH]
#   GOALPOST_HOST_URL   a host already running; else one is started with HOST_CMD
#   HOST_CMD            starts the host under test; $PORT is its port
#                       [goalpost-host serve --listen 127.0.0.1:$PORT --db :memory: --conformance-seams ...]
#   TOKEN_A, TOKEN_B    tenant tokens                        [ci-a, ci-b]
#   WEBHOOK_SECRET      the host's webhook secret            [ci-secret]
#   GOALPOST_ARGS       more `goalpost run` arguments, e.g. "--profile core"
#   OUT                 the report folder                    [goalpost-report]
#   BASELINE            a committed report.json: gate with `goalpost diff`
#                       (exit 1 only on a new MUST regression); without it the
#                       run's own exit code gates
#   GITHUB_STEP_SUMMARY where report.md goes                 [$OUT/step-summary.md]
#
# Exit: 0 pass, 1 regression (or, without a baseline, a failure), 2 could not run.
set -euo pipefail

goalpost="${GOALPOST:-goalpost}"
out="${OUT:-goalpost-report}"
token_a="${TOKEN_A:-ci-a}"
token_b="${TOKEN_B:-ci-b}"
secret="${WEBHOOK_SECRET:-ci-secret}"
host_pid=""
cleanup() { if [ -n "$host_pid" ]; then kill "$host_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

# 1. Start the host under test (unless one is given).
if [ -n "${GOALPOST_HOST_URL:-}" ]; then
    url="$GOALPOST_HOST_URL"
else
    PORT="${PORT:-18080}"
    export PORT
    cmd="${HOST_CMD:-goalpost-host serve --listen 127.0.0.1:\$PORT --db :memory: --conformance-seams --token $token_a=tenant-a --token $token_b=tenant-b --webhook-secret $secret}"
    # exec: the background job is the host itself, so the trap stops it.
    eval "exec $cmd" >"${TMPDIR:-/tmp}/goalpost-ci-host.log" 2>&1 &
    host_pid=$!
    url="http://127.0.0.1:$PORT"
fi
# Wait until it answers: doctor exits 2 while nobody listens.
deadline=$((SECONDS + 60))
until "$goalpost" doctor --host "$url" --token "$token_a" >/dev/null 2>&1 || [ $? -ne 2 ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "the host at $url did not answer within 60 s" >&2
        exit 2
    fi
    sleep 0.2
done

# 2. Run the suite, quietly: the summary table only.
status=0
# shellcheck disable=SC2086 # GOALPOST_ARGS is a list of arguments
"$goalpost" run --quiet --host "$url" --token "$token_a" --token-b "$token_b" \
    --webhook-secret "$secret" --report-dir "$out" ${GOALPOST_ARGS:-} || status=$?
if [ "$status" -ge 2 ]; then
    echo "goalpost could not run (exit $status)" >&2
    exit "$status"
fi

# 3. Publish report.md as the step summary.
cat "$out/report.md" >>"${GITHUB_STEP_SUMMARY:-$out/step-summary.md}"

# 4. The artifacts a job uploads.
for file in report.html junit.xml report.json; do
    test -f "$out/$file" || { echo "missing $out/$file" >&2; exit 2; }
    echo "artifact: $out/$file"
done

# 5. Gate: new MUST regressions against the baseline, else the run itself.
if [ -n "${BASELINE:-}" ]; then
    "$goalpost" diff "$BASELINE" "$out/report.json"
else
    exit "$status"
fi
