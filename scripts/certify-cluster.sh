#!/usr/bin/env bash
# Certifies a cluster: three goalpost-host replicas on one PostgreSQL
# database, with the whole suite spreading its requests over them
# (`goalpost run --host A --host B --host C`: each request goes to the next
# replica, so a goal made on one is read, run and closed on the others).
# `.ci/run` runs it; needs PostgreSQL (scripts/start-postgres.sh).
#
# Environment (all optional):
#   GOALPOST, GOALPOST_HOST   the binaries   [target/release/goalpost, target/release/goalpost-host]
#   OUT                       the report folder                   [a temporary one]
#   BASE_PORT                 the first replica's port; the others follow [18101]
#
# Exit: goalpost's when it is not 0; else 1 unless core, behavior, observed,
# hardening and cluster are all certified; 2 if a replica never answered.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
goalpost="${GOALPOST:-target/release/goalpost}"
host="${GOALPOST_HOST:-target/release/goalpost-host}"
out="${OUT:-$(mktemp -d)}"
base_port="${BASE_PORT:-18101}"
# A schema of its own, made anew: no earlier run's goals count.
url=$(scripts/start-postgres.sh cluster_certify)

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

hosts=()
for offset in 0 1 2; do
    port=$((base_port + offset))
    "$host" --listen "127.0.0.1:$port" --db "$url" --conformance-seams \
        --token ci-a=tenant-a --token ci-b=tenant-b --webhook-secret ci-secret \
        >"${TMPDIR:-/tmp}/goalpost-replica-$port.log" 2>&1 &
    pids+=("$!")
    hosts+=(--host "http://127.0.0.1:$port")
done
# Ready when each answers: doctor exits 2 while nobody listens (polled
# with a deadline).
for offset in 0 1 2; do
    port=$((base_port + offset))
    deadline=$((SECONDS + 60))
    until "$goalpost" doctor --host "http://127.0.0.1:$port" --token ci-a >/dev/null 2>&1 || [ $? -ne 2 ]; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "replica 127.0.0.1:$port did not answer within 60 s" >&2
            exit 2
        fi
        sleep 0.2
    done
done
status=0
"$goalpost" run "${hosts[@]}" --token ci-a --token-b ci-b --webhook-secret ci-secret \
    --strict --quiet --report-dir "$out" || status=$?
if [ "$status" -ne 0 ]; then
    exit "$status"
fi
# Nothing failed is not enough: a profile whose scenarios all skipped (the
# cluster profile given one endpoint, say) fails nothing and certifies
# nothing. Each of these must be certified by the three replicas.
python3 - "$out/report.json" <<'CHECK'
import json, sys
report = json.load(open(sys.argv[1]))
wanted = ["core", "behavior", "observed", "hardening", "cluster"]
missing = [p for p in wanted if not report["profiles"].get(p, {}).get("certified")]
if missing:
    print(f"three replicas on PostgreSQL: not certified in {', '.join(missing)} (see {sys.argv[1]})", file=sys.stderr)
    sys.exit(1)
print(f"three replicas on PostgreSQL: certified in {', '.join(wanted)}")
CHECK
