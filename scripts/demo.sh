#!/usr/bin/env bash
# demo.sh: the whole pipeline in one process for a bounded time, on
# embedded defaults (in-process coordination, the local file system; no
# Java, no ZooKeeper): two datacenter clusters with an Avro page-view
# producer each, a mirror into the analytics cluster, a scheduled loader
# writing Avro files, and the audit service. Then it stops the producers,
# waits for everything to be loaded and audited, and prints the audit
# report, the loaded files, records read back from them, one summary line
# and, last, the readiness line (1-minute partitions become ready on the
# audit's proof and are compacted while one watches). Run through `make demo`, which builds bin/tributary first.
# Exits non-zero unless every record was loaded exactly once and every
# closed audit window is complete.
#
# DEMO_DURATION (default 90s) is how long the producers run; DEMO_RATE
# (default 50) their page views per second, per datacenter. DEMO_SECURE=1
# (make demo-secure) secures every part (pipeline demo --secure): generated
# certificates and users, SASL_SSL, mutual TLS, HTTPS with basic auth.
set -euo pipefail

cd "$(dirname "$0")/.."
bin=${TRIBUTARY_BIN:-bin/tributary}
duration=${DEMO_DURATION:-90s}
rate=${DEMO_RATE:-50}
secure=()
if [ "${DEMO_SECURE:-0}" = 1 ]; then
	secure=(--secure)
fi

if [ ! -x "$bin" ]; then
	echo "demo: $bin not found; run 'make demo' (it builds first)" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tributary-demo.XXXXXX")
cleanup() {
	local status=$?
	if [ "$status" -ne 0 ] && [ -f "$work/pipeline.log" ]; then
		echo "demo: failed (exit $status); last log lines:" >&2
		tail -n 30 "$work/pipeline.log" >&2
	fi
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT

# Short audit windows and load intervals so that windows close while one
# watches; the binary itself is the scheduled loader job's executable.
"$bin" pipeline demo --dir "$work" --duration "$duration" --rate "$rate" \
	--audit-window 10s --load-interval 5s --loader scheduled \
	--log-level warn --log-file "$work/pipeline.log" ${secure[@]+"${secure[@]}"}
