#!/usr/bin/env bash
# demo.sh: `tributary dev` (three brokers in one process, on in-process
# coordination) on a temporary directory, a produce/consume round trip and a
# short bench, with no other service. Run through `make demo`, which
# builds bin/tributary first. Exits non-zero on any failure; the broker and
# the directory are removed whatever happens.
#
# DEMO_BENCH_RECORDS (default 200000) sets the bench size.
set -euo pipefail

cd "$(dirname "$0")/.."
bin=${TRIBUTARY_BIN:-bin/tributary}
records=${DEMO_BENCH_RECORDS:-200000}

if [ ! -x "$bin" ]; then
	echo "demo: $bin not found; run 'make demo' (it builds first)" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tributary-demo.XXXXXX")
broker_pid=

cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
		kill -TERM "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	if [ "$status" -ne 0 ] && [ -f "$work/dev.log" ]; then
		echo "demo: failed (exit $status); last log lines:" >&2
		tail -n 20 "$work/dev.log" >&2
	fi
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }

step "starting tributary dev: 3 brokers in one process (data in $work/data)"
"$bin" dev --dir "$work/data" --brokers 3 --port 0 --log-level warn >"$work/dev.out" 2>"$work/dev.log" &
broker_pid=$!
bs=
for _ in $(seq 150); do
	if ! kill -0 "$broker_pid" 2>/dev/null; then
		echo "demo: tributary dev exited during start-up" >&2
		exit 1
	fi
	bs=$(sed -n 's/^bootstrap: //p' "$work/dev.out")
	if [ -n "$bs" ]; then
		break
	fi
	sleep 0.2
done
if [ -z "$bs" ]; then
	echo "demo: tributary dev did not print its bootstrap address within 30 s" >&2
	exit 1
fi
cat "$work/dev.out"
echo "cluster is up (pid $broker_pid), bootstrap $bs"

step "tributary topics create --topic greetings --partitions 3"
"$bin" topics create --bootstrap "$bs" --topic greetings --partitions 3
"$bin" topics describe --bootstrap "$bs" --topic greetings

step "tributary produce --topic greetings --key-separator :"
printf '%s\n' "en:hello" "fr:bonjour" "de:hallo" "es:hola" "it:ciao" >"$work/sent.txt"
cat "$work/sent.txt"
"$bin" produce --bootstrap "$bs" --topic greetings --key-separator : <"$work/sent.txt"

step "tributary consume --topic greetings --offset earliest --print-key"
"$bin" consume --bootstrap "$bs" --topic greetings --offset earliest --max-messages 5 \
	--print-key --key-separator : --timeout-ms 10000 >"$work/received.txt"
cat "$work/received.txt"
# Partitions interleave in any order; the set of records must match.
if ! diff <(sort "$work/sent.txt") <(sort "$work/received.txt") >/dev/null; then
	echo "demo: consumed records differ from the produced ones:" >&2
	diff <(sort "$work/sent.txt") <(sort "$work/received.txt") >&2 || true
	exit 1
fi
echo "round trip OK: 5 records produced and consumed back"

step "tributary bench produce --records $records --record-size 100 --partitions 6 --acks 1"
"$bin" bench produce --bootstrap "$bs" --topic bench --records "$records" --record-size 100 \
	--partitions 6 --acks 1

step "tributary bench consume --records $records"
"$bin" bench consume --bootstrap "$bs" --topic bench --records "$records"

# At an unlimited rate, e2e latency measures queueing; a paced run shows
# what one record takes from send to receive.
e2e=$((records / 10))
step "tributary bench e2e --records $e2e --record-size 100 --throughput 10000"
"$bin" bench e2e --bootstrap "$bs" --topic bench-e2e --records "$e2e" --record-size 100 \
	--partitions 6 --acks 1 --throughput 10000

step "stopping tributary dev (SIGTERM)"
kill -TERM "$broker_pid"
if ! wait "$broker_pid"; then
	broker_pid=
	echo "demo: tributary dev did not shut down cleanly" >&2
	exit 1
fi
broker_pid=
echo "cluster stopped cleanly; demo OK"
