#!/usr/bin/env bash
# Publishes reports/matrix/: the compatibility matrix of the reference host
# and its conforming variants (scenarios/variants.json), so the page shows
# what "certified with a different legal choice" looks like.
#
#   scripts/publish-matrix.sh            # variants' reports, then the matrix
#   SKIP_VARIANTS=1 scripts/publish-matrix.sh   # only rebuild the matrix
#
# Each variant is served by `goalpost-host-builds --variant NAME` (the
# reference host's other builds, host-builds/) on a free local port and run with the whole
# suite (--strict) into reports/variants/NAME/. reports/reference-host/ is
# taken as it is (regenerate it first, README "Published report").
# suite/tests/it/published_matrix.rs fails when the matrix is stale.
set -euo pipefail
# Byte order, as suite/tests/it/published_matrix.rs sorts the variants.
export LC_ALL=C

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --release -p goalpost
goalpost="$root/target/release/goalpost"
sources=(reports/reference-host/report.json)

if [ -z "${SKIP_VARIANTS:-}" ] && [ -f scenarios/variants.json ]; then
    cargo build --release -p goalpost-host-builds
    host_bin="$root/target/release/goalpost-host-builds"
    secret="goalpost-publish-$$"
    names=$(grep -o '"name": *"[^"]*"' scenarios/variants.json | sed 's/.*"\([^"]*\)"$/\1/')
    rm -rf reports/variants
    for name in $names; do
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        "$host_bin" --listen "127.0.0.1:$port" --db :memory: --conformance-seams \
            --token goalpost-a=tenant-a --token goalpost-b=tenant-b \
            --principal-token goalpost-principal=tenant-a \
            --host-authority-token goalpost-host-authority=tenant-a \
            --webhook-secret "$secret" --variant "$name" >"/tmp/goalpost-variant-$name.log" 2>&1 &
        host_pid=$!
        # Ready when doctor gets an answer (it exits 2 while nobody listens).
        for _ in $(seq 1 100); do
            code=0
            "$goalpost" doctor --host "http://127.0.0.1:$port" --token goalpost-a >/dev/null 2>&1 || code=$?
            [ "$code" -ne 2 ] && break
            sleep 0.1
        done
        status=0
        "$goalpost" run --strict --quiet --host "http://127.0.0.1:$port" \
            --token goalpost-a --token-b goalpost-b --webhook-secret "$secret" \
            --principal-token goalpost-principal --host-authority-token goalpost-host-authority \
            --report-dir "reports/variants/$name" || status=$?
        kill "$host_pid"
        wait "$host_pid" 2>/dev/null || true
        # 1: something failed (a strict requirement pinning the reference
        # host's choice fails by design); 2 would mean it could not start.
        if [ "$status" -ge 2 ]; then
            echo "variant $name: goalpost could not run (exit $status)" >&2
            exit "$status"
        fi
    done
fi

if [ -d reports/variants ]; then
    for report in $(ls reports/variants/*/report.json | sort); do
        sources+=("$report")
    done
fi
"$goalpost" matrix "${sources[@]}" --out reports/matrix
