#!/usr/bin/env bash
# bench-cleaner.sh: the log cleaner of Apache Kafka and of Tributary side by
# side on this machine, on the same data, and one table of medians and the
# ratio (tributary / kafka) of what each cleaner reports about itself.
#
# Per run, interleaved (Kafka, then Tributary) so that drift on a shared
# machine hits both alike:
#   1. a fresh compacted topic of 1 partition, segment.bytes=16 MiB and
#      min.compaction.lag.ms of a day, so that nothing is cleaned while it fills
#   2. the same data file produced into it by the same client (kcat, no
#      compression): BENCH_RECORDS lines KEY:VALUE over BENCH_KEYS keys, values
#      of BENCH_VALUE_BYTES bytes
#   3. min.compaction.lag.ms=0 (Kafka's ConfigCommand, on both), so that the
#      cleaner cleans every sealed segment in one cleaning
#   4. that cleaning's summary line: Kafka's "Log cleaner thread 0 cleaned log
#      ... MB of log processed in S seconds (R MB/sec)" (kafka.log.LogCleaner,
#      Kafka's log-cleaner.log; server.log with scripts/kafka.sh's log4j
#      setup), and ours ("Log cleaner: cleaned log ..." with read_mb, seconds,
#      mb_per_sec, written_mb). MB are MiB in both; "processed" is the dirty
#      log the cleaner read and rewrote, the same measure in both.
#   5. the topic deleted
#
# Environment:
#   BENCH_RECORDS      records per run (default 2000000)
#   BENCH_KEYS         distinct keys (default 100000)
#   BENCH_VALUE_BYTES  value size (default 100)
#   BENCH_RUNS         runs per system; the table shows medians (default 3)
#   BENCH_WARMUP       1: one unmeasured run per system first, so that neither
#                      is measured cold (a JVM before its JIT warms up; seen:
#                      Kafka's first cleaning at a sixth of its later rate);
#                      0 to skip (default 1)
#   BENCH_SEGMENT_BYTES  segment.bytes of the topics (default 16777216); the
#                      data must fill at least two segments
#   BENCH_CLEAN_WAIT   bound in seconds on the wait for a cleaning (default 300)
#   BENCH_DIR          parent dir of both systems' data (default: a temp dir,
#                      removed afterwards); both on one disk by construction
#   BENCH_KEEP=1       keep BENCH_DIR (logs, raw outputs)
#
# Ports, each plus TRIBUTARY_TEST_PORT_OFFSET: Kafka 127.0.0.1:19092
# (+controller 19093), Tributary 127.0.0.1:19192.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"

records=${BENCH_RECORDS:-2000000}
keys=${BENCH_KEYS:-100000}
value_bytes=${BENCH_VALUE_BYTES:-100}
runs=${BENCH_RUNS:-3}
clean_wait=${BENCH_CLEAN_WAIT:-300}
warmup=${BENCH_WARMUP:-1}
offset=${TRIBUTARY_TEST_PORT_OFFSET:-0}
kafka_addr=127.0.0.1:$((19092 + offset))
tributary_addr=127.0.0.1:$((19192 + offset))
bin=$repo/bin/tributary
segment_bytes=${BENCH_SEGMENT_BYTES:-$((16 << 20))}

die() {
	echo "bench-cleaner: $*" >&2
	exit 1
}
say() { echo "bench-cleaner: $*" >&2; }

for v in records keys value_bytes runs clean_wait segment_bytes; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done
# Only sealed segments are cleaned: a log of one segment is never cleaned.
[ $((records * (value_bytes + 20))) -ge $((2 * segment_bytes)) ] ||
	die "$records records of $value_bytes B do not fill two segments of $segment_bytes B (BENCH_SEGMENT_BYTES)"
[[ $warmup =~ ^[01]$ ]] || die "BENCH_WARMUP must be 0 or 1, not '$warmup'"
command -v kcat >/dev/null || die "kcat not found: run \`make deps\`"

bench_setup tributary-bench-cleaner
start_kafka "$kafka_addr"
kafka_log=$TRIBUTARY_KAFKA_DIR/logs/server.log

say "starting tributary broker on $tributary_addr"
start_tributary "$tributary_addr" tributary log.cleaner.enable=true log.cleaner.backoff.ms=1000
tributary_log=$dir/tributary/broker.log

# The data, once: the same bytes go to both.
data=$dir/data.txt
say "writing $records records over $keys keys to $data"
awk -v n="$records" -v k="$keys" -v size="$value_bytes" 'BEGIN {
	srand(1)
	pad = ""
	while (length(pad) < size) pad = pad "x"
	for (i = 0; i < n; i++) {
		v = sprintf("%d-%s", i, pad)
		printf "key-%07d:%s\n", int(rand() * k), substr(v, 1, size)
	}
}' >"$data"

# set_config ADDR TOPIC KEY=VALUE: through Kafka's own ConfigCommand on both.
set_config() {
	bash "$here/kafka.sh" run kafka.admin.ConfigCommand --bootstrap-server "$1" --alter \
		--entity-type topics --entity-name "$2" --add-config "$3" >"$dir/results/config.out" 2>&1 ||
		{ cat "$dir/results/config.out" >&2; die "cannot set $3 on $2 at $1"; }
}

# await_line FILE PATTERN PID: bounded wait until FILE has a line matching
# PATTERN; fails early if PID (if any) has exited.
await_line() {
	local deadline=$((SECONDS + clean_wait))
	until grep -qF -- "$2" "$1" 2>/dev/null; do
		if [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; then
			die "broker pid $3 exited before logging '$2' (logs in $dir)"
		fi
		[ $SECONDS -lt $deadline ] || die "no '$2' in $1 after ${clean_wait}s (logs in $dir)"
		sleep 0.5
	done
}

# kafka_stats TOPIC: "MB SECONDS MB_PER_SEC" of Kafka's cleaning of TOPIC-0.
kafka_stats() {
	grep -F -A 2 -- "cleaned log $1-0 " "$kafka_log" |
		sed -nE 's/^[[:space:]]*([0-9.,]+) MB of log processed in ([0-9.,]+) seconds \(([0-9.,]+) MB\/sec\).*/\1 \2 \3/p' |
		tr -d , | head -n 1
}

# tributary_stats TOPIC: the same from our cleaner's line.
tributary_stats() {
	grep -F -- "cleaned log $1-0 " "$tributary_log" | head -n 1 |
		awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
			END { if (f["mb_per_sec"] == "") exit 1; printf "%s %s %s\n", f["read_mb"], f["seconds"], f["mb_per_sec"] }'
}

mkdir -p "$dir/results"
runs_list=$(seq 1 "$runs")
[ "$warmup" = 1 ] && runs_list="warmup $runs_list"
for run in $runs_list; do
	for system in kafka tributary; do
		addr=$kafka_addr log=$kafka_log pid=
		if [ "$system" = tributary ]; then
			addr=$tributary_addr log=$tributary_log pid=$tributary_pid
		fi
		topic=clean-r$run
		say "run $run (of $runs) $system: producing $records records into $topic"
		"$bin" topics create --bootstrap "$addr" --topic "$topic" --partitions 1 --replication-factor 1 \
			--config cleanup.policy=compact --config segment.bytes=$segment_bytes \
			--config min.cleanable.dirty.ratio=0.01 --config min.compaction.lag.ms=86400000 >/dev/null ||
			die "cannot create topic $topic on $system"
		kcat -P -b "$addr" -t "$topic" -p 0 -K : -z none -l "$data" ||
			die "kcat could not produce into $topic on $system"
		say "run $run (of $runs) $system: cleaning $topic"
		set_config "$addr" "$topic" min.compaction.lag.ms=0
		await_line "$log" "cleaned log $topic-0 " "$pid"
		# Kafka logs the figures on the lines after the first.
		deadline=$((SECONDS + 30))
		until stats=$("${system}_stats" "$topic") && [ -n "$stats" ]; do
			[ $SECONDS -lt $deadline ] || die "cannot parse $system's cleaner line for $topic (logs in $dir)"
			sleep 0.5
		done
		echo "$stats" >"$dir/results/$system.$run"
		say "run $run (of $runs) $system: $(awk '{ printf "%s MB in %s s: %s MB/s", $1, $2, $3 }' <<<"$stats")"
		"$bin" topics delete --bootstrap "$addr" --topic "$topic" >/dev/null ||
			die "cannot delete topic $topic on $system"
	done
done

# cleaner_stat SYSTEM FIELD: the median over the runs of field FIELD (1 MB, 2 s, 3 MB/s).
cleaner_stat() {
	local run
	for run in $(seq 1 "$runs"); do
		awk -v n="$2" '{ print $n }' "$dir/results/$1.$run"
	done | median
}

row() { table_row "$1" "$(cleaner_stat kafka "$2")" "$(cleaner_stat tributary "$2")"; }

echo
echo "Apache Kafka vs Tributary log cleaner, one machine, same data (kcat, no compression); medians of $runs runs after $warmup unmeasured"
echo "$records records over $keys keys, ${value_bytes} B values, 1 partition, segment.bytes=$segment_bytes, one cleaning of every sealed segment"
echo "figures as each cleaner reports them (MB = MiB of dirty log read); ratio = tributary / kafka"
echo
table_header
row "cleaner MB/s" 3
row "dirty MB cleaned" 1
row "cleaning seconds" 2
