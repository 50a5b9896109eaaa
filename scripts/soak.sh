#!/usr/bin/env bash
# soak.sh: the pipeline soak on real ZooKeeper (the 3-node ensemble, one
# member of which is killed and restarted) and real HDFS, which must be
# running (make soak starts them through with-servers.sh). Steady traffic
# of SOAK_RATE page views/s per datacenter for SOAK_DURATION, with a fault
# every SOAK_FAULT_EVERY: the mirror, the loader and the audit service
# restarted, a broker of each cluster stopped and started, the analytics
# cluster unreachable for 30 s (runs of 10 minutes or more) and a ZooKeeper
# member killed. At the end, every produced record must be in the HDFS
# files exactly once (read back from them) and every closed audit window
# complete; a summary table is printed.
#
#   SOAK_DURATION (default 10m), SOAK_RATE (default 2500), SOAK_FAULT_EVERY (default 30s)
set -euo pipefail

cd "$(dirname "$0")/.."
duration=${SOAK_DURATION:-10m}
rate=${SOAK_RATE:-2500}
every=${SOAK_FAULT_EVERY:-30s}

for v in TRIBUTARY_TEST_ZK_ENSEMBLE TRIBUTARY_TEST_HDFS; do
	if [ -z "${!v:-}" ]; then
		echo "soak: $v is not set; run through 'make soak' (scripts/with-servers.sh starts the servers)" >&2
		exit 1
	fi
done

# The test bounds itself (the run plus ten minutes for start-up and the
# drain), so go test's own timeout is off.
TRIBUTARY_SOAK_DURATION=$duration TRIBUTARY_SOAK_RATE=$rate TRIBUTARY_SOAK_FAULT_EVERY=$every \
TRIBUTARY_SOAK_ENSEMBLE=1 \
	go test -count=1 -timeout 0 -run '^TestSoak$' -v ./pipeline/
