#!/usr/bin/env bash
# bench-vs-kafka.sh: Apache Kafka and Tributary side by side on this machine,
# driven by the same client (`tributary bench`) with the same arguments, and
# one table of medians and ratios (tributary / kafka).
#
# Per run and per system, interleaved so that drift on a shared machine hits
# both alike, on fresh topics of 6 partitions:
#   bench produce  BENCH_RECORDS records of 100 bytes, acks=1, unthrottled
#   bench consume  the same records back, one consumer (franz-go), with the
#                  broker's CPU seconds per million records (/proc/PID/stat)
#   kcat -C -e     the same records back with kcat (librdkafka's defaults):
#                  wall time to every partition's end, broker CPU likewise
#   Java consumer  the same records back with Kafka's own
#                  kafka-consumer-perf-test (org.apache.kafka.tools.
#                  ConsumerPerformance of the 3.9 jars, a group of one
#                  consumer, the Java client's defaults), broker CPU likewise;
#                  nMsg.sec counts from before the group join, fetch.nMsg.sec
#                  from after it
#   transactions   unless BENCH_TXN=0: bench produce --transactional-id with
#                  --txn-records 1000 (one committed transaction per 1,000
#                  records, acks=all), then the same records consumed with
#                  --isolation-level read_committed and read_uncommitted,
#                  broker CPU per million records for each
#   bench e2e      BENCH_E2E_RECORDS records at BENCH_E2E_THROUGHPUT records/s:
#                  latency at a fixed rate both can carry; unthrottled, it would
#                  only measure the producer's queue (-1 for that anyway)
# and, unless BENCH_SECURE=0, right after each produce and consume pair over
# PLAINTEXT the same pair over SASL_SSL (SCRAM-SHA-512, TLS with the
# certificates of `tributary certs`, the user made with Kafka's
# kafka-storage format --add-scram on Kafka and Kafka's kafka-configs
# --bootstrap-server, i.e. AlterUserScramCredentials, on ours), against a
# second listener of the same brokers; a second table compares the two
# protocols per system and the systems over SASL_SSL.
#
# Broker CPU: utime+stime of the broker process (/proc/PID/stat) before and
# after each single-broker produce and consume run, as CPU-seconds per
# million records. It counts every thread of the broker (Kafka's JIT and GC
# included), nothing of the client, which runs on the same machine.
#
# Environment:
#   BENCH_RECORDS         records per produce/consume run (default 2000000)
#   BENCH_RUNS            runs per system; the table shows medians (default 3)
#   BENCH_E2E_RECORDS     default BENCH_RECORDS/10
#   BENCH_E2E_THROUGHPUT  default 20000
#   BENCH_E2E_LINGER_MS   the e2e producer's linger.ms (default 10, kgo's;
#                         the Java producer's is 0 before Kafka 4.0, 5 since):
#                         at 20,000 records/s the e2e latency is mostly this
#                         wait, the same for both brokers; 0 shows what the
#                         brokers add
#   BENCH_WARMUP_RECORDS  produced and consumed once per system before the
#                         measured runs, so that neither is measured cold (a JVM
#                         before its JIT warms up); 0 to skip (default 200000)
#   BENCH_JAVA_TOOLS=1    also runs Kafka's own ProducerPerformance against both,
#                         plain (acks=1) and transactional (acks=all,
#                         --transactional-id, --transaction-duration-ms 100)
#   BENCH_JAVA_CONSUMER=0 skips the Java consumer rows (default 1: run them)
#   BENCH_TXN=0           skips the transactional rows (default 1: run them)
#   BENCH_RF3=0           skips the replicated rows (default 1: run them)
#   BENCH_SECURE=0        skips the SASL_SSL rows (default 1: run them)
#   BENCH_RF3_WARMUP_RECORDS  produced once per replicated system before its
#                         measured runs; three fresh JVMs need more than one
#                         (seen: Kafka's first 200000-record runs at a quarter
#                         of its third's rate); 0 to skip (default 1000000)
#   BENCH_DIR             parent dir of both systems' data (default: a temp dir,
#                         removed afterwards); both on one disk by construction
#   BENCH_KEEP=1          keep BENCH_DIR (logs, raw outputs)
#
# Then, unless BENCH_RF3=0, after stopping the single brokers: three Apache
# Kafka nodes (KRaft, each broker and controller, same JVM flags and heap as
# the single one) and three Tributary brokers (coordinated through a
# ZooKeeper this script starts with scripts/zk.sh), each with its own data
# dir, on one topic per system of 6 partitions, replication factor 3 and
# min.insync.replicas=2:
#   bench produce  BENCH_RECORDS records of 100 bytes, acks=all, unthrottled
#   bench e2e      BENCH_E2E_RECORDS at BENCH_E2E_THROUGHPUT records/s, acks=all,
#                  into a second topic of replication factor 3 and a third of
#                  replication factor 1 on the same three brokers
# after one unmeasured warm-up produce per system (BENCH_RF3_WARMUP_RECORDS)
# into the same topic (and a tenth of an e2e run into each e2e topic). One topic, not one per run: the first produce into a
# new replicated topic waits for the followers to start fetching it (seen:
# ours up to ~0.8 s, a large part of a short run), which is not the steady
# state this row compares.
#
# Ports, each plus TRIBUTARY_TEST_PORT_OFFSET: Kafka 127.0.0.1:19092
# (+controller 19093, +SASL_SSL 19091), Tributary 127.0.0.1:19192 (+SASL_SSL
# 19191); replicated: Kafka nodes
# 19094/19096/19098 (+controllers 19095/19097/19099), Tributary brokers
# 19193/19194/19195, ZooKeeper 21810.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"

records=${BENCH_RECORDS:-2000000}
runs=${BENCH_RUNS:-3}
e2e_records=${BENCH_E2E_RECORDS:-$((records / 10))}
e2e_throughput=${BENCH_E2E_THROUGHPUT:-20000}
e2e_linger=${BENCH_E2E_LINGER_MS:-10}
warmup_records=${BENCH_WARMUP_RECORDS:-200000}
rf3=${BENCH_RF3:-1}
rf3_warmup_records=${BENCH_RF3_WARMUP_RECORDS:-1000000}
java_consumer=${BENCH_JAVA_CONSUMER:-1}
txn=${BENCH_TXN:-1}
offset=${TRIBUTARY_TEST_PORT_OFFSET:-0}
kafka_addr=127.0.0.1:$((19092 + offset))
tributary_addr=127.0.0.1:$((19192 + offset))
kafka_sec_addr=127.0.0.1:$((19091 + offset))
tributary_sec_addr=127.0.0.1:$((19191 + offset))
secure=${BENCH_SECURE:-1}
bin=$repo/bin/tributary

die() {
	echo "bench-vs-kafka: $*" >&2
	exit 1
}
say() { echo "bench-vs-kafka: $*" >&2; }

# start_tributary, stop_tributary, bench_setup (dir, traps), median,
# table_header and table_row.
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"

for v in records runs e2e_records; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done
[[ $e2e_linger =~ ^[0-9]+$ ]] || die "BENCH_E2E_LINGER_MS must be a non-negative integer, not '$e2e_linger'"
[[ $warmup_records =~ ^[0-9]+$ ]] || die "BENCH_WARMUP_RECORDS must be a number, not '$warmup_records'"
[[ $rf3 =~ ^[01]$ ]] || die "BENCH_RF3 must be 0 or 1, not '$rf3'"
[[ $secure =~ ^[01]$ ]] || die "BENCH_SECURE must be 0 or 1, not '$secure'"
[[ $java_consumer =~ ^[01]$ ]] || die "BENCH_JAVA_CONSUMER must be 0 or 1, not '$java_consumer'"
[[ $txn =~ ^[01]$ ]] || die "BENCH_TXN must be 0 or 1, not '$txn'"
[[ $rf3_warmup_records =~ ^[0-9]+$ ]] || die "BENCH_RF3_WARMUP_RECORDS must be a number, not '$rf3_warmup_records'"
command -v kcat >/dev/null || die "kcat not found: run \`make deps\`"

bench_setup tributary-bench

# The replicated clusters: Kafka node N runs scripts/kafka.sh with its own
# state dir, node id and a port offset of 2N (client 19092+2N, controller
# 19093+2N); Tributary broker N listens on 19192+N.
rf3_kafka_started=
rf3_zk_started=
rf3_pids=()
kafka_cluster_id=
kafka_voters=1@127.0.0.1:$((19095 + offset)),2@127.0.0.1:$((19097 + offset)),3@127.0.0.1:$((19099 + offset))
rf3_kafka_addrs=127.0.0.1:$((19094 + offset)),127.0.0.1:$((19096 + offset)),127.0.0.1:$((19098 + offset))
rf3_tributary_addrs=127.0.0.1:$((19193 + offset)),127.0.0.1:$((19194 + offset)),127.0.0.1:$((19195 + offset))
zk_addr=127.0.0.1:$((21810 + offset))

# kafka_node N ARGS...: scripts/kafka.sh ARGS for replicated Kafka node N.
kafka_node() {
	local n=$1
	shift
	TRIBUTARY_KAFKA_DIR=$dir/kafka-rf3-$n TRIBUTARY_KAFKA_DATA=$dir/kafka-rf3-$n-data \
		TRIBUTARY_TEST_PORT_OFFSET=$((offset + 2 * n)) KAFKA_NODE_ID=$n \
		KAFKA_QUORUM_VOTERS=$kafka_voters KAFKA_CLUSTER_ID=$kafka_cluster_id bash "$here/kafka.sh" "$@"
}

zk() { TRIBUTARY_ZK_DIR=$dir/zk TRIBUTARY_TEST_PORT_OFFSET=$offset bash "$here/zk.sh" "$@"; }

# stop_rf3 stops whatever start_rf3 started: our brokers first (in parallel,
# while ZooKeeper still serves their controlled shutdown), then the Kafka
# nodes, then ZooKeeper.
stop_rf3() {
	local pid n waits=()
	stop_brokers 60 "${rf3_pids[@]}"
	rf3_pids=()
	if [ -n "$rf3_kafka_started" ]; then
		# The last node standing waits for a quorum it cannot get: its
		# controlled shutdown never ends. The data is scratch; a short grace.
		for n in 1 2 3; do
			KAFKA_STOP_SECONDS=15 kafka_node "$n" stop &
			waits+=($!)
		done
		for pid in "${waits[@]}"; do
			wait "$pid" || true
		done
		rf3_kafka_started=
	fi
	if [ -n "$rf3_zk_started" ]; then
		zk stop || true
		rf3_zk_started=
	fi
}

# await_brokers ADDR N PID...: bounded wait until the broker at ADDR lists N
# brokers; fails early when one of PIDs (if any) has exited.
await_brokers() {
	local addr=$1 n=$2 deadline=$((SECONDS + 120)) pid
	shift 2
	until kcat -L -b "$addr" -m 3 2>/dev/null | grep -q " $n brokers:"; do
		for pid in "$@"; do
			kill -0 "$pid" 2>/dev/null || die "broker pid $pid exited before $addr listed $n brokers (logs in $dir)"
		done
		[ $SECONDS -lt $deadline ] || die "$addr does not list $n brokers after 120s (logs in $dir)"
		sleep 0.5
	done
}

start_rf3() {
	local n pid addr starts=()
	kafka_cluster_id=$(bash "$here/kafka.sh" run kafka.tools.StorageTool random-uuid) ||
		die "cannot make a Kafka cluster id"
	say "starting three Apache Kafka nodes on $rf3_kafka_addrs"
	rf3_kafka_started=1
	# At once: a KRaft quorum elects no leader before a majority is up.
	for n in 1 2 3; do
		kafka_node "$n" start >/dev/null &
		starts+=($!)
	done
	for pid in "${starts[@]}"; do
		wait "$pid" || die "a replicated Kafka node did not start (logs in $dir/kafka-rf3-*/logs)"
	done
	for n in 1 2 3; do
		await_brokers "127.0.0.1:$((19092 + offset + 2 * n))" 3
	done

	say "starting ZooKeeper on $zk_addr and three tributary brokers on $rf3_tributary_addrs"
	rf3_zk_started=1
	zk start >/dev/null
	for n in 1 2 3; do
		addr=127.0.0.1:$((19192 + offset + n))
		if nc -z -w 1 "${addr%:*}" "${addr##*:}" >/dev/null 2>&1; then
			die "port $addr is already in use (or set TRIBUTARY_TEST_PORT_OFFSET)"
		fi
		mkdir -p "$dir/tributary-rf3-$n" "$dir/tributary-rf3-$n-data"
		cat >"$dir/tributary-rf3-$n/server.properties" <<EOF
broker.id=$n
listeners=PLAINTEXT://$addr
log.dirs=$dir/tributary-rf3-$n-data
num.partitions=1
group.initial.rebalance.delay.ms=0
zookeeper.connect=$zk_addr
EOF
		"$bin" broker --config "$dir/tributary-rf3-$n/server.properties" </dev/null \
			>"$dir/tributary-rf3-$n/broker.log" 2>&1 &
		rf3_pids+=($!)
	done
	for n in 1 2 3; do
		await_brokers "127.0.0.1:$((19192 + offset + n))" 3 "${rf3_pids[@]}"
	done
}

# bench_cleanup (bench-lib.sh) runs it after stopping the single brokers.
bench_stop_extra() { stop_rf3; }

say "load at the start: $(uptime)"
say "building bin/tributary"
"${MAKE:-make}" --no-print-directory -s build

bash "$here/kafka.sh" fetch

# The secured listeners' material: a CA and the brokers' certificate
# (key and chain in one PEM file, which both read), one SCRAM user with a
# random password, and the client properties every SASL_SSL run uses.
sec=$dir/secure
client_config=$sec/client.properties
if [ "$secure" = 1 ]; then
	case $sec in *[:}]*) die "BENCH_DIR '$dir' may not contain ':' or '}' (\${file:...} in $client_config)" ;; esac
	"$bin" certs --dir "$sec" --server broker --host localhost,127.0.0.1 >/dev/null
	(umask 077 && head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$sec/bench.password")
	cat >"$client_config" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bench" password="\${file:$sec/bench.password}";
ssl.truststore.type=PEM
ssl.truststore.location=$sec/ca.pem
EOF
	say "starting Apache Kafka on $kafka_addr and SASL_SSL $kafka_sec_addr"
	KAFKA_SSL_KEYSTORE=$sec/broker.pem KAFKA_SCRAM_USER=bench KAFKA_SCRAM_PASSWORD_FILE=$sec/bench.password \
		bash "$here/kafka.sh" start >/dev/null
else
	say "starting Apache Kafka on $kafka_addr"
	bash "$here/kafka.sh" start >/dev/null
fi

say "starting tributary broker on $tributary_addr"
# As scripts/kafka.sh configures Kafka: the Java consumer's group joins at once.
tributary_props=(group.initial.rebalance.delay.ms=0)
if [ "$secure" = 1 ]; then
	if nc -z -w 1 "${tributary_sec_addr%:*}" "${tributary_sec_addr##*:}" >/dev/null 2>&1; then
		die "port $tributary_sec_addr is already in use (or set TRIBUTARY_TEST_PORT_OFFSET)"
	fi
	# A repeated key's last value wins: the listeners replace start_tributary's.
	tributary_props+=("listeners=PLAINTEXT://$tributary_addr,SASL_SSL://$tributary_sec_addr"
		ssl.keystore.type=PEM "ssl.keystore.location=$sec/broker.pem"
		listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512)
fi
start_tributary "$tributary_addr" tributary "${tributary_props[@]}"

if [ "$secure" = 1 ]; then
	# Through the PLAINTEXT listener: nobody can log in before the user exists.
	say "creating SCRAM user bench on tributary with Kafka's kafka-configs"
	bash "$here/kafka.sh" run kafka.admin.ConfigCommand --bootstrap-server "$tributary_addr" --alter \
		--add-config "SCRAM-SHA-512=[password=$(cat "$sec/bench.password")]" \
		--entity-type users --entity-name bench >"$dir/tributary/kafka-configs.out" 2>&1 ||
		{ cat "$dir/tributary/kafka-configs.out" >&2; die "kafka-configs could not create the SCRAM user on $tributary_addr"; }
	for addr in "$kafka_sec_addr" "$tributary_sec_addr"; do
		deadline=$((SECONDS + 60))
		until "$bin" topics list --bootstrap "$addr" --command-config "$client_config" >/dev/null 2>"$dir/login.err"; do
			[ $SECONDS -lt $deadline ] || die "user bench cannot log in on $addr after 60s: $(cat "$dir/login.err")"
			sleep 0.5
		done
	done
fi

# cpu_ticks PID: utime+stime of PID in clock ticks (/proc/PID/stat fields 14
# and 15, counted after the parenthesised command name, which may hold spaces).
clk_tck=$(getconf CLK_TCK)
cpu_ticks() {
	local stat
	stat=$(cat "/proc/$1/stat") || die "broker pid $1 is gone"
	echo "${stat##*) }" | awk '{ print $12 + $13 }'
}

# broker_pid SYSTEM: the pid of the single broker of SYSTEM.
broker_pid() {
	if [ "$1" = kafka ]; then
		cat "$TRIBUTARY_KAFKA_DIR/kafka.pid"
	else
		echo "$tributary_pid"
	fi
}

# perf_field FILE N: field N of a kafka-producer-perf-test line
#   "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency,
#    P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
# fields: 1 records, 2 records/s, 3 MB/s, 4 avg, 5 max, 6 p50, 7 p95, 8 p99, 9 p99.9
perf_field() {
	local line
	line=$(grep -E '^[0-9]+ records sent, ' "$1" | tail -n 1) ||
		die "no kafka-producer-perf-test line in $1: $(head -c 300 "$1")"
	echo "$line" | sed -E 's/^([0-9.]+) records sent, ([0-9.]+) records\/sec \(([0-9.]+) MB\/sec\), ([0-9.]+) ms avg latency, ([0-9.]+) ms max latency, ([0-9.]+) ms 50th, ([0-9.]+) ms 95th, ([0-9.]+) ms 99th, ([0-9.]+) ms 99\.9th\.?$/\1 \2 \3 \4 \5 \6 \7 \8 \9/' |
		awk -v n="$2" -v f="$1" 'NF != 9 { print "bench-vs-kafka: cannot parse " f > "/dev/stderr"; exit 1 } { print $n }'
}

# cpu_field FILE _: the broker CPU-seconds per million records of a run.
cpu_field() { cat "$1.cpu" || die "no CPU figure for $1"; }

# consume_field FILE N: field N of the CSV line after kafka-consumer-perf-test's
# header (4 MB.sec, 5 nMsg, 6 nMsg.sec; the Java tool's 10 fetch.nMsg.sec).
consume_field() {
	awk -F', *' -v n="$2" -v f="$1" '
		/^start\.time/ { header = 1; next }
		header && NF >= 6 { v = $n; found = 1 }
		END { if (!found) { print "bench-vs-kafka: no consumer-perf data line in " f > "/dev/stderr"; exit 1 } print v }
	' "$1"
}

# run_kcat SYSTEM ADDR RUN TOPIC: kcat (librdkafka, its default fetch
# settings) reads TOPIC from the beginning to its end (-e: every partition
# at its high watermark, which takes one last fetch of fetch.wait.max.ms on
# either system). Writes "records seconds records/s broker-cpu-s
# broker-cpu-s-per-million" to $dir/results/SYSTEM.kcat.RUN.
# The spread between runs is the client's: librdkafka stops fetching while
# its queue holds queued.min.messages (100000, about two responses here)
# and looks again only when its broker thread next wakes (up to a second),
# so the faster responses come, the more often a busy machine's kcat stalls
# (seen: 0 to 3 stalls of 0.3-0.9 s per run on either system).
run_kcat() {
	local system=$1 addr=$2 run=$3 topic=$4 out pid c0 c1 t0 t1
	out=$dir/results/$system.kcat.$run
	say "run $run/$runs: kcat consume against $system"
	pid=$(broker_pid "$system")
	c0=$(cpu_ticks "$pid")
	t0=$(date +%s.%N)
	if ! kcat -C -b "$addr" -t "$topic" -o beginning -e -q -f '' 2>"$out.err"; then
		cat "$out.err" >&2
		die "kcat consume against $system ($addr) failed"
	fi
	t1=$(date +%s.%N)
	c1=$(cpu_ticks "$pid")
	awk -v n="$records" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v hz="$clk_tck" \
		'BEGIN { s = t1 - t0; c = (c1 - c0) / hz; printf "%d %.3f %.1f %.3f %.4f\n", n, s, n / s, c, c * 1e6 / n }' >"$out"
}

# run_java_consume SYSTEM ADDR RUN TOPIC [N]: Kafka's kafka-consumer-perf-test
# reads N (default BENCH_RECORDS) records of TOPIC with a group of its own;
# its output goes to $dir/results/SYSTEM.javacons.RUN, the broker's
# CPU-seconds per million records to the same with .cpu. --timeout is the
# longest wait for a record, the group join included: the first group of a
# Kafka broker waits for __consumer_offsets to be created (50 partitions),
# which is why the warm-up runs it once per system.
run_java_consume() {
	local system=$1 addr=$2 run=$3 topic=$4 n=${5:-$records} out pid c0 c1
	out=$dir/results/$system.javacons.$run
	say "run $run/$runs: Kafka ConsumerPerformance against $system"
	pid=$(broker_pid "$system")
	c0=$(cpu_ticks "$pid")
	if ! bash "$here/kafka.sh" run org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$addr" \
		--topic "$topic" --messages "$n" --timeout 120000 --group "bench-javacons-r$run" \
		>"$out" 2>"$out.err"; then
		cat "$out" "$out.err" >&2
		die "ConsumerPerformance against $system ($addr) failed"
	fi
	c1=$(cpu_ticks "$pid")
	awk -v b="$c0" -v a="$c1" -v hz="$clk_tck" -v n="$n" 'BEGIN { printf "%.4f\n", (a - b) / hz / n * 1e6 }' >"$out.cpu"
	[ "$(consume_field "$out" 5)" = "$n" ] ||
		die "ConsumerPerformance against $system consumed $(consume_field "$out" 5) of $n records"
}

# field FILE N: field N of the one line of FILE.
field() { awk -v n="$2" '{ print $n }' "$1"; }

# run_bench SYSTEM ADDR RUN KIND ARGS...: one `tributary bench` run; its
# output goes to $dir/results/SYSTEM.${result_prefix}KIND.RUN and, when
# cpu_pid is set, the broker's CPU-seconds per million records (of
# --records) to the same with .cpu.
mkdir -p "$dir/results"
result_prefix=
cpu_pid=
run_bench() {
	local system=$1 addr=$2 run=$3 kind=$4 out before after n
	shift 4
	out=$dir/results/$system.$result_prefix$kind.$run
	if [ "$run" = warmup ]; then
		say "warm-up: $result_prefix$kind against $system"
	else
		say "run $run/$runs: $result_prefix$kind against $system"
	fi
	[ -z "$cpu_pid" ] || before=$(cpu_ticks "$cpu_pid")
	if ! "$bin" bench "$kind" --bootstrap "$addr" "$@" >"$out" 2>"$out.err"; then
		cat "$out" "$out.err" >&2
		die "bench $kind against $system ($addr) failed"
	fi
	if [ -n "$cpu_pid" ]; then
		after=$(cpu_ticks "$cpu_pid")
		n=$(printf '%s\n' "$@" | awk 'prev == "--records" { print; exit } { prev = $0 }')
		awk -v b="$before" -v a="$after" -v hz="$clk_tck" -v n="$n" 'BEGIN { printf "%.4f\n", (a - b) / hz / n * 1e6 }' >"$out.cpu"
	fi
	# Parse now, so that a malformed line stops the run where it happened.
	if [ "$kind" = consume ]; then
		consume_field "$out" 6 >/dev/null || die "bench consume against $system printed no data line"
	else
		perf_field "$out" 2 >/dev/null || die "bench $kind against $system printed no perf-test line"
	fi
}

# run_java_perf SYSTEM ADDR RUN [KIND ACKS ARGS...]: Kafka's own
# ProducerPerformance, for reference (KIND javaperf, acks=1, by default).
run_java_perf() {
	local system=$1 addr=$2 run=$3 kind=${4:-javaperf} acks=${5:-1} out
	shift $(($# < 5 ? $# : 5))
	out=$dir/results/$system.$kind.$run
	say "run $run/$runs: Kafka ProducerPerformance ($kind) against $system"
	if ! bash "$here/kafka.sh" run org.apache.kafka.tools.ProducerPerformance --topic "$kind-r$run" \
		--num-records "$records" --record-size 100 --throughput -1 "$@" \
		--producer-props bootstrap.servers="$addr" acks="$acks" >"$out.raw" 2>"$out.err"; then
		cat "$out.raw" "$out.err" >&2
		die "ProducerPerformance against $system failed"
	fi
	# Progress lines come first; the summary is the last line.
	tail -n 1 "$out.raw" >"$out"
	perf_field "$out" 2 >/dev/null || die "ProducerPerformance against $system printed no summary line"
}

# both PROTOCOL RUN KIND ARGS...: run_bench against Kafka, then against
# Tributary, over PLAINTEXT (plain) or SASL_SSL (sec: results prefixed
# sec-, --command-config added, topic names of ARGS prefixed sec-); results
# are prefixed label_prefix too.
label_prefix=
both() {
	local proto=$1 run=$2 kind=$3 system addr args
	shift 3
	for system in kafka tributary; do
		args=("$@")
		if [ "$proto" = sec ]; then
			result_prefix=sec-$label_prefix
			addr=$kafka_sec_addr
			[ "$system" = tributary ] && addr=$tributary_sec_addr
			args=("${args[@]/#bench-/sec-bench-}" --command-config "$client_config")
		else
			result_prefix=$label_prefix
			addr=$kafka_addr
			[ "$system" = tributary ] && addr=$tributary_addr
		fi
		cpu_pid=$(broker_pid "$system")
		run_bench "$system" "$addr" "$run" "$kind" "${args[@]}"
	done
	result_prefix=
	cpu_pid=
}

protocols=(plain)
[ "$secure" = 0 ] || protocols+=(sec)

if [ "$warmup_records" -gt 0 ]; then
	for proto in "${protocols[@]}"; do
		both "$proto" warmup produce --topic bench-warmup --records "$warmup_records" \
			--record-size 100 --acks 1 --partitions 6
		both "$proto" warmup consume --topic bench-warmup --records "$warmup_records" \
			--record-size 100 --partitions 6 --timeout-ms 30000
	done
	if [ "$java_consumer" = 1 ]; then
		run_java_consume kafka "$kafka_addr" warmup bench-warmup "$warmup_records"
		run_java_consume tributary "$tributary_addr" warmup bench-warmup "$warmup_records"
	fi
fi

for run in $(seq 1 "$runs"); do
	for proto in "${protocols[@]}"; do
		both "$proto" "$run" produce --topic "bench-r$run" --records "$records" \
			--record-size 100 --acks 1 --partitions 6
	done
	for proto in "${protocols[@]}"; do
		both "$proto" "$run" consume --topic "bench-r$run" --records "$records" \
			--record-size 100 --partitions 6 --timeout-ms 30000
	done
	for system in kafka tributary; do
		addr=$kafka_addr
		[ "$system" = tributary ] && addr=$tributary_addr
		run_kcat "$system" "$addr" "$run" "bench-r$run"
		[ "$java_consumer" = 0 ] || run_java_consume "$system" "$addr" "$run" "bench-r$run"
	done
	if [ "$txn" = 1 ]; then
		label_prefix=txn-
		both plain "$run" produce --topic "bench-txn-r$run" --records "$records" \
			--record-size 100 --acks -1 --partitions 6 --transactional-id "bench-txn-r$run" --txn-records 1000
		for iso in read_committed read_uncommitted; do
			label_prefix=txn-$iso-
			both plain "$run" consume --topic "bench-txn-r$run" --records "$records" \
				--record-size 100 --partitions 6 --timeout-ms 30000 --isolation-level "$iso"
		done
		label_prefix=
	fi
	both plain "$run" e2e --topic "bench-e2e-r$run" --records "$e2e_records" \
		--record-size 100 --acks 1 --partitions 6 --throughput "$e2e_throughput" --linger-ms "$e2e_linger" --timeout-ms 30000
	if [ -n "${BENCH_JAVA_TOOLS:-}" ]; then
		run_java_perf kafka "$kafka_addr" "$run"
		run_java_perf tributary "$tributary_addr" "$run"
		if [ "$txn" = 1 ]; then
			for system in kafka tributary; do
				addr=$kafka_addr
				[ "$system" = tributary ] && addr=$tributary_addr
				run_java_perf "$system" "$addr" "$run" javaperf-txn all \
					--transactional-id "javaperf-txn-r$run" --transaction-duration-ms 100
			done
		fi
	fi
done

# create_rf3_topic ADDR TOPIC: 6 partitions, replication factor 3,
# min.insync.replicas=2, created by the same client on both systems; bench
# then finds it and waits until every partition has a leader.
create_rf3_topic() {
	local rf=${3:-3}
	"$bin" topics create --bootstrap "$1" --topic "$2" --partitions 6 --replication-factor "$rf" \
		--config min.insync.replicas=$((rf < 2 ? rf : 2)) >/dev/null || die "cannot create topic $2 on $1"
}

if [ "$rf3" = 1 ]; then
	# Alone on the machine: the single brokers would only take memory.
	stop_tributary
	bash "$here/kafka.sh" stop
	start_rf3
	result_prefix=rf3-
	for addr in "$rf3_kafka_addrs" "$rf3_tributary_addrs"; do
		create_rf3_topic "$addr" bench-rf3
		create_rf3_topic "$addr" bench-rf3-e2e
		create_rf3_topic "$addr" bench-rf1-e2e 1
	done
	for system in kafka tributary; do
		addr=$rf3_kafka_addrs
		[ "$system" = tributary ] && addr=$rf3_tributary_addrs
		for rf in rf3 rf1; do
			result_prefix=$rf-
			run_bench "$system" "$addr" warmup e2e --topic "bench-$rf-e2e" --records $((e2e_records / 10 + 1)) \
				--record-size 100 --acks all --throughput "$e2e_throughput" --linger-ms "$e2e_linger" --timeout-ms 30000
		done
	done
	result_prefix=rf3-
	if [ "$rf3_warmup_records" -gt 0 ]; then
		for system in kafka tributary; do
			addr=$rf3_kafka_addrs
			[ "$system" = tributary ] && addr=$rf3_tributary_addrs
			run_bench "$system" "$addr" warmup produce --topic bench-rf3 --records "$rf3_warmup_records" \
				--record-size 100 --acks all
		done
	fi
	for run in $(seq 1 "$runs"); do
		for system in kafka tributary; do
			addr=$rf3_kafka_addrs
			[ "$system" = tributary ] && addr=$rf3_tributary_addrs
			result_prefix=rf3-
			run_bench "$system" "$addr" "$run" produce --topic bench-rf3 --records "$records" \
				--record-size 100 --acks all
		done
		for rf in rf3 rf1; do
			result_prefix=$rf-
			for system in kafka tributary; do
				addr=$rf3_kafka_addrs
				[ "$system" = tributary ] && addr=$rf3_tributary_addrs
				run_bench "$system" "$addr" "$run" e2e --topic "bench-$rf-e2e" --records "$e2e_records" \
					--record-size 100 --acks all --throughput "$e2e_throughput" --linger-ms "$e2e_linger" --timeout-ms 30000
			done
		done
	done
	result_prefix=
fi

# runs_median FIELD_FN FIELD SYSTEM KIND: median over the runs.
runs_median() {
	local fn=$1 field=$2 system=$3 kind=$4 run
	for run in $(seq 1 "$runs"); do
		"$fn" "$dir/results/$system.$kind.$run" "$field"
	done | median
}

row() {
	table_row "$1" "$(runs_median "$2" "$3" kafka "$4")" "$(runs_median "$2" "$3" tributary "$4")"
}

echo
echo "Apache Kafka vs Tributary, one machine, same client (tributary bench); medians of $runs runs"
echo "produce/consume: $records records x 100 B, acks=1, 6 partitions; e2e: $e2e_records records at $e2e_throughput/s, linger $e2e_linger ms"
if [ "$rf3" = 1 ]; then
	echo "rf3: three brokers per system, $records records x 100 B, acks=all, 6 partitions, replication factor 3, min.insync.replicas=2"
fi
if [ "$txn" = 1 ]; then
	echo "txn: $records records x 100 B, acks=all, 1000 records per committed transaction; read_committed/read_uncommitted: the same records consumed"
fi
echo "ratio = tributary / kafka (throughput: higher is better; latency: lower is better)"
echo "load at the end: $(uptime)"
echo
table_header
row "produce records/s" perf_field 2 produce
row "produce MB/s" perf_field 3 produce
row "produce p99 ms" perf_field 8 produce
row "produce broker CPU s/M records" cpu_field 0 produce
row "consume records/s" consume_field 6 consume
row "consume MB/s" consume_field 4 consume
row "consume broker CPU s/M records" cpu_field 0 consume
row "kcat consume records/s" field 3 kcat
row "kcat broker CPU s/M records" field 5 kcat
if [ "$java_consumer" = 1 ]; then
	row "Java consumer nMsg/s" consume_field 6 javacons
	row "Java consumer fetch nMsg/s" consume_field 10 javacons
	row "Java consumer broker CPU s/M" cpu_field 0 javacons
fi
row "e2e p50 ms" perf_field 6 e2e
row "e2e p99 ms" perf_field 8 e2e
row "e2e p99.9 ms" perf_field 9 e2e
if [ -n "${BENCH_JAVA_TOOLS:-}" ]; then
	row "ProducerPerformance records/s" perf_field 2 javaperf
	row "ProducerPerformance p99 ms" perf_field 8 javaperf
	if [ "$txn" = 1 ]; then
		row "ProducerPerf txn records/s" perf_field 2 javaperf-txn
	fi
fi
if [ "$txn" = 1 ]; then
	row "txn produce records/s" perf_field 2 txn-produce
	row "txn produce p99 ms" perf_field 8 txn-produce
	row "txn produce broker CPU s/M" cpu_field 0 txn-produce
	row "read_committed records/s" consume_field 6 txn-read_committed-consume
	row "read_committed broker CPU s/M" cpu_field 0 txn-read_committed-consume
	row "read_uncommitted records/s" consume_field 6 txn-read_uncommitted-consume
	row "read_uncommitted broker CPU s/M" cpu_field 0 txn-read_uncommitted-consume
fi
if [ "$rf3" = 1 ]; then
	row "rf3 acks=all produce records/s" perf_field 2 rf3-produce
	row "rf3 acks=all produce MB/s" perf_field 3 rf3-produce
	row "rf3 acks=all produce p99 ms" perf_field 8 rf3-produce
	row "rf3 acks=all e2e p50 ms" perf_field 6 rf3-e2e
	row "rf3 acks=all e2e p99 ms" perf_field 8 rf3-e2e
	row "rf3 acks=all e2e p99.9 ms" perf_field 9 rf3-e2e
	row "3 brokers rf1 e2e p50 ms" perf_field 6 rf1-e2e
	row "3 brokers rf1 e2e p99 ms" perf_field 8 rf1-e2e
	row "3 brokers rf1 e2e p99.9 ms" perf_field 9 rf1-e2e
fi

# secure_row LABEL FIELD_FN FIELD KIND: PLAINTEXT and SASL_SSL medians per
# system, their ratio per system, and ours over Kafka's under SASL_SSL.
secure_row() {
	local label=$1 fn=$2 field=$3 kind=$4 kp ks tp ts
	kp=$(runs_median "$fn" "$field" kafka "$kind")
	ks=$(runs_median "$fn" "$field" kafka "sec-$kind")
	tp=$(runs_median "$fn" "$field" tributary "$kind")
	ts=$(runs_median "$fn" "$field" tributary "sec-$kind")
	awk -v l="$label" -v kp="$kp" -v ks="$ks" -v tp="$tp" -v ts="$ts" '
		function ratio(a, b) { return (b > 0) ? sprintf("%.2fx", a / b) : "n/a" }
		BEGIN {
			printf "| %-30s | %10.2f | %10.2f | %7s | %10.2f | %10.2f | %7s | %8s |\n",
				l, kp, ks, ratio(ks, kp), tp, ts, ratio(ts, tp), ratio(ts, ks)
		}'
}

if [ "$secure" = 1 ]; then
	echo
	echo "SASL_SSL (SCRAM-SHA-512) vs PLAINTEXT, the same brokers, runs interleaved; medians of $runs runs"
	echo "sec/pt = SASL_SSL / PLAINTEXT per system; ours/kafka = tributary / kafka over SASL_SSL"
	echo "CPU: broker process utime+stime per million records (lower is better)"
	echo
	printf '| %-30s | %10s | %10s | %7s | %10s | %10s | %7s | %8s |\n' metric "kafka pt" "kafka sec" sec/pt \
		"ours pt" "ours sec" sec/pt ours/kfk
	printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..32})" "$(printf -- '-%.0s' {1..12})" \
		"$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..9})" "$(printf -- '-%.0s' {1..12})" \
		"$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..9})" "$(printf -- '-%.0s' {1..10})"
	secure_row "produce records/s" perf_field 2 produce
	secure_row "produce MB/s" perf_field 3 produce
	secure_row "produce broker CPU s/M records" cpu_field 0 produce
	secure_row "consume records/s" consume_field 6 consume
	secure_row "consume MB/s" consume_field 4 consume
	secure_row "consume broker CPU s/M records" cpu_field 0 consume
fi
