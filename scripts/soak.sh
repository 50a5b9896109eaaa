#!/usr/bin/env bash
# soak.sh: the multi-process soak (`tributary soak`, package pipeline/soak):
# every part of the pipeline its own process of bin/tributary, on a 3-node
# ZooKeeper ensemble (scripts/zk.sh) and an HDFS with 2 DataNodes
# (testing/hdfs) that it starts itself on free ports, under a random fault
# schedule whose seed it prints; at the end every acknowledged record must
# be mirrored and loaded exactly once (read back with fastavro) and every
# closed audit window complete, or it exits non-zero. `make soak` runs it
# after make deps and make build.
#
#   SOAK_DURATION (default 10m)   how long the producers run
#   SOAK_RATE (default 200)       page views/s per datacenter
#   SOAK_SEED                     replay a run's fault schedule
#   SOAK_SECURE=1                 the secured soak: SASL_SSL and ACLs, ZooKeeper ACLs,
#                                 HTTPS registries and audit, Kerberized HDFS
#   SOAK_DIR                      keep data and logs there (default a new temp dir, kept)
#   TRIBUTARY_TEST_PYTHON         Python with fastavro (default .cache/venv/bin/python3)
set -euo pipefail

cd "$(dirname "$0")/.."
python=${TRIBUTARY_TEST_PYTHON:-$PWD/.cache/venv/bin/python3}
if [ ! -x "$python" ]; then
	echo "soak: $python missing: run \`make deps\` (it makes .cache/venv with fastavro), or set TRIBUTARY_TEST_PYTHON" >&2
	exit 1
fi
args=(--duration "${SOAK_DURATION:-10m}" --rate "${SOAK_RATE:-200}" --python "$python" --repo .)
[ -n "${SOAK_SEED:-}" ] && args+=(--seed "$SOAK_SEED")
[ -n "${SOAK_DIR:-}" ] && args+=(--dir "$SOAK_DIR")
[ "${SOAK_SECURE:-0}" = 1 ] && args+=(--secure)
exec bin/tributary soak "${args[@]}"
