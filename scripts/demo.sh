#!/usr/bin/env bash
# demo.sh: one broker on a temporary directory, a produce/consume round trip
# and a short bench, with no other service. Run through `make demo`, which
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
	if [ "$status" -ne 0 ] && [ -f "$work/broker.log" ]; then
		echo "demo: failed (exit $status); last broker log lines:" >&2
		tail -n 20 "$work/broker.log" >&2
	fi
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }

# free_port prints a loopback port nothing listens on. bash's /dev/tcp
# connect fails on a free port; the broker failing to bind is caught below.
free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "demo: no free port found" >&2
	return 1
}

port=$(free_port)
bs=127.0.0.1:$port
cat >"$work/server.properties" <<EOF
broker.id=1
listeners=PLAINTEXT://127.0.0.1:$port
log.dirs=$work/data
num.partitions=1
EOF

step "starting the broker on $bs (data in $work/data)"
"$bin" broker --config "$work/server.properties" >"$work/broker.log" 2>&1 &
broker_pid=$!
ready=
for _ in $(seq 150); do
	if ! kill -0 "$broker_pid" 2>/dev/null; then
		echo "demo: the broker exited during start-up" >&2
		exit 1
	fi
	if "$bin" topics list --bootstrap "$bs" --request-timeout 1s >/dev/null 2>&1; then
		ready=1
		break
	fi
	sleep 0.2
done
if [ -z "$ready" ]; then
	echo "demo: the broker did not answer within 30 s" >&2
	exit 1
fi
echo "broker is up (pid $broker_pid)"

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

step "stopping the broker (SIGTERM)"
kill -TERM "$broker_pid"
if ! wait "$broker_pid"; then
	broker_pid=
	echo "demo: the broker did not shut down cleanly" >&2
	exit 1
fi
broker_pid=
echo "broker stopped cleanly; demo OK"
