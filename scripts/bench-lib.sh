# bench-lib.sh: what the side-by-side benchmarks against Apache Kafka share,
# sourced (not run) by scripts/bench-vs-kafka.sh and scripts/bench-cleaner.sh.
# The caller defines say and die (its own message prefix), bin (the
# tributary binary) and dir (its scratch dir).
#
#   start_tributary ADDR NAME [PROPERTY...]
#                  one broker on ADDR, config and broker.log in $dir/NAME,
#                  data in $dir/NAME-data, extra server.properties lines
#                  after the name; waits (bounded) until it serves and sets
#                  tributary_pid
#   stop_tributary SIGTERM, a bounded wait, then SIGKILL
#   stop_brokers SECONDS PID...
#                  the same for tributary brokers PID..., in parallel
#   median         the median of the numbers on stdin, one a line
#   table_header   the header of the results table
#   bench_setup NAME, start_kafka ADDR: see below
#   table_row LABEL KAFKA TRIBUTARY
#                  a row with the ratio tributary / kafka

tributary_pid=

start_tributary() {
	local addr=$1 name=$2 deadline
	shift 2
	if nc -z -w 1 "${addr%:*}" "${addr##*:}" >/dev/null 2>&1; then
		die "port $addr is already in use (or set TRIBUTARY_TEST_PORT_OFFSET)"
	fi
	mkdir -p "$dir/$name" "$dir/$name-data"
	{
		echo "broker.id=1"
		echo "listeners=PLAINTEXT://$addr"
		echo "log.dirs=$dir/$name-data"
		echo "num.partitions=1"
		printf '%s\n' "$@"
	} >"$dir/$name/server.properties"
	"$bin" broker --config "$dir/$name/server.properties" </dev/null >"$dir/$name/broker.log" 2>&1 &
	tributary_pid=$!
	deadline=$((SECONDS + 60))
	until kcat -L -b "$addr" -m 3 2>/dev/null | grep -q ' 1 brokers:'; do
		if ! kill -0 "$tributary_pid" 2>/dev/null; then
			tail -n 30 "$dir/$name/broker.log" >&2
			tributary_pid=
			die "tributary broker exited before serving on $addr"
		fi
		[ $SECONDS -lt $deadline ] || die "tributary broker not serving on $addr after 60s"
		sleep 0.2
	done
}

stop_tributary() {
	[ -n "$tributary_pid" ] || return 0
	stop_brokers 30 "$tributary_pid"
	tributary_pid=
}

stop_brokers() {
	local seconds=$1 pid deadline
	shift
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	deadline=$((SECONDS + seconds))
	for pid in "$@"; do
		while kill -0 "$pid" 2>/dev/null; do
			if [ $SECONDS -ge $deadline ]; then
				say "tributary broker pid $pid ignored SIGTERM for ${seconds}s; killing it"
				kill -KILL "$pid" 2>/dev/null || true
			fi
			sleep 0.1
		done
		wait "$pid" 2>/dev/null || true
	done
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

table_header() {
	printf '| %-30s | %12s | %12s | %7s |\n' metric kafka tributary ratio
	printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..32})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..9})"
}

table_row() {
	awk -v l="$1" -v k="$2" -v t="$3" 'BEGIN {
		r = (k > 0) ? sprintf("%.2fx", t / k) : "n/a"
		printf "| %-30s | %12.2f | %12.2f | %7s |\n", l, k, t, r
	}'
}

# bench_setup NAME: dir is BENCH_DIR or a new temp dir named after NAME,
# Apache Kafka's state and data go under it, and the traps are set: on
# exit our broker and Kafka are stopped, then bench_stop_extra runs if the
# caller defines it, and dir is removed unless BENCH_KEEP or BENCH_DIR is set.
bench_setup() {
	if [ -n "${BENCH_DIR:-}" ]; then
		mkdir -p "$BENCH_DIR"
		dir=$(realpath "$BENCH_DIR")
	else
		dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	fi
	export TRIBUTARY_KAFKA_DIR=$dir/kafka
	export TRIBUTARY_KAFKA_DATA=$dir/kafka-data
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

bench_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_tributary
	bash "$here/kafka.sh" stop || true
	if declare -F bench_stop_extra >/dev/null; then
		bench_stop_extra
	fi
	if [ -n "${BENCH_KEEP:-}" ] || [ -n "${BENCH_DIR:-}" ]; then
		say "logs and raw results kept in $dir"
	else
		rm -rf "$dir"
	fi
	exit "$rc"
}

# start_kafka ADDR: builds bin/tributary, then one Apache Kafka node on
# ADDR (scripts/kafka.sh, state in $dir/kafka).
start_kafka() {
	say "building bin/tributary"
	"${MAKE:-make}" --no-print-directory -s build
	bash "$here/kafka.sh" fetch
	say "starting Apache Kafka on $1"
	bash "$here/kafka.sh" start >/dev/null
}
