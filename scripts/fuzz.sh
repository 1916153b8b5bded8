#!/usr/bin/env bash
# Runs each fuzz target of reference-host/fuzz for a fixed time and writes a
# summary to reference-host/fuzz/RESULTS.md.
#
#   scripts/fuzz.sh                 # every target, 60 s each
#   FUZZ_SECONDS=600 scripts/fuzz.sh create_request
#
# cargo-fuzz needs nightly features; on a stable toolchain they are enabled
# with RUSTC_BOOTSTRAP=1 (set here). A crash leaves its input under
# reference-host/fuzz/artifacts/<target>/: turn it into a regression test
# before fixing it.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz="$root/reference-host/fuzz"
seconds="${FUZZ_SECONDS:-60}"
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=(fixture_ref create_request scenario_loader)
fi

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install cargo-fuzz
fi
export RUSTC_BOOTSTRAP=1

cd "$fuzz"
mkdir -p corpus/fixture_ref corpus/create_request corpus/scenario_loader logs
cp seeds/fixture_ref/* corpus/fixture_ref/
cp seeds/create_request/* corpus/create_request/
# Every shipped scenario is a seed for the loader.
find "$root/scenarios" -name '*.json' -exec cp {} corpus/scenario_loader/ \;

summary="$(mktemp)"
status=0
for target in "${targets[@]}"; do
    echo "== $target: ${seconds}s"
    log="logs/$target.log"
    if cargo fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 >"$log" 2>&1; then
        outcome="no crash"
    else
        outcome="CRASH (see reference-host/fuzz/artifacts/$target/)"
        status=1
    fi
    # libFuzzer's last status line: "#N DONE cov: … corp: …" and the rate.
    runs="$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')"
    done_line="$(grep -E 'DONE|pulse' "$log" | tail -1 || true)"
    rate="$(grep -Eo 'exec/s: [0-9]+' "$log" | tail -1 || true)"
    cov="$(echo "$done_line" | grep -Eo 'cov: [0-9]+ ft: [0-9]+' || true)"
    corpus_size="$(find "corpus/$target" -type f | wc -l | tr -d ' ')"
    echo "| \`$target\` | ${seconds} s | ${runs:-?} | ${rate:-?} | ${cov:-?} | $corpus_size | $outcome |" >>"$summary"
    tail -3 "$log"
done

{
    echo "# Fuzzing results"
    echo
    echo "Written by \`scripts/fuzz.sh\` ($(date -u +%Y-%m-%dT%H:%MZ), $(rustc --version), cargo-fuzz $(cargo fuzz --version 2>/dev/null | awk '{print $2}'))."
    echo "cargo-fuzz defaults: AddressSanitizer, optimised with debug assertions, nightly"
    echo "features through \`RUSTC_BOOTSTRAP=1\` on the stable toolchain."
    echo "Each target ran for a fixed time from the seeds in \`seeds/\` (and, for the"
    echo "loader, every scenario in \`scenarios/\`). A crash's input is kept under"
    echo "\`artifacts/<target>/\` and becomes a regression test before the fix."
    echo
    echo "| target | time | runs | rate | coverage | corpus | outcome |"
    echo "|---|---|---|---|---|---|---|"
    cat "$summary"
} >"$fuzz/RESULTS.md"
rm -f "$summary"
echo "== summary in reference-host/fuzz/RESULTS.md"
exit "$status"
