#!/usr/bin/env bash
# Runs Apache Kafka (jars from Maven Central, scripts/kafka/pom.xml) as a
# single KRaft node on loopback, for side-by-side benchmarks.
#
#   kafka.sh fetch             copies the jars into .cache/kafka/lib (once; again
#                              only when scripts/kafka/pom.xml changes)
#   kafka.sh start             formats and starts a broker; waits until it serves
#                              (bounded) and prints `export TRIBUTARY_TEST_KAFKA=...`
#   kafka.sh stop              stops it and waits until it is gone
#   kafka.sh status
#   kafka.sh run CLASS ARGS... runs a Java main on Kafka's classpath, e.g.
#                              org.apache.kafka.tools.ProducerPerformance
#
# Environment:
#   TRIBUTARY_KAFKA_DIR         state dir: config, logs, pid and, unless
#                               TRIBUTARY_KAFKA_DATA is set, the data under data/
#                               (default .cache/kafka/run)
#   TRIBUTARY_KAFKA_DATA        log.dirs; put it on the same disk as the data of
#                               whatever Kafka is compared with
#   TRIBUTARY_TEST_PORT_OFFSET  added to the ports (default 0)
#   KAFKA_HEAP_OPTS             default -Xmx1g -Xms1g
#   KAFKA_WAIT_SECONDS          bound on the start wait (default 120)
#   KAFKA_STOP_SECONDS          bound on the wait after SIGTERM before SIGKILL
#                               (default 60)
#   KAFKA_NODE_ID               node.id (default 1)
#   KAFKA_QUORUM_VOTERS         controller.quorum.voters (default: this node
#                               alone); for a cluster, start every node with
#                               its own TRIBUTARY_KAFKA_DIR, port offset and
#                               node id, the same voters and the same
#                               KAFKA_CLUSTER_ID, at once (a quorum needs a
#                               majority of them up before any serves)
#   KAFKA_CLUSTER_ID            cluster id used to format the data dir
#                               (default: a random one)
#   KAFKA_LIB                   the jars (default .cache/kafka/lib); fetch fills
#                               it, so another checkout's fetched jars can be
#                               shared (both must have the same pom.xml)
#   KAFKA_SSL_KEYSTORE          a PEM file with the broker's key and certificate
#                               chain (e.g. from `tributary certs`): also listen
#                               on a SASL_SSL listener with SCRAM-SHA-256 and
#                               SCRAM-SHA-512 (inter-broker traffic stays
#                               PLAINTEXT)
#   KAFKA_SCRAM_USER, KAFKA_SCRAM_PASSWORD_FILE
#                               a SCRAM user (both mechanisms) written into the
#                               metadata when the data dir is formatted
#                               (kafka-storage format --add-scram), so that it
#                               can log in from the start; the password is read
#                               from the file (trailing newline dropped)
#   KAFKA_LINK_LISTENER         "PORT HOST:PORT": also a PLAINTEXT listener named
#                               LINK on 127.0.0.1:PORT advertised as HOST:PORT
#                               (a proxy in front of it, e.g. `tributary link`,
#                               so that clients of that listener reach every
#                               broker through the proxy)
#
# Ports (plus the offset): client 127.0.0.1:19092, controller 127.0.0.1:19093,
# SASL_SSL (with KAFKA_SSL_KEYSTORE) 127.0.0.1:19091.
# JVM flags are those of Kafka's own kafka-server-start.sh, so that a
# comparison is against Kafka as it is shipped.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
offset=${TRIBUTARY_TEST_PORT_OFFSET:-0}
port=$((19092 + offset))
controller_port=$((19093 + offset))
sasl_ssl_port=$((19091 + offset))
lib=$(realpath -m "${KAFKA_LIB:-$repo/.cache/kafka/lib}")
keystore=${KAFKA_SSL_KEYSTORE:-}
scram_user=${KAFKA_SCRAM_USER:-}
scram_password_file=${KAFKA_SCRAM_PASSWORD_FILE:-}
# Absolute: the broker is recognised by its state dir in its command line.
dir=$(realpath -m "${TRIBUTARY_KAFKA_DIR:-$repo/.cache/kafka/run}")
data=$(realpath -m "${TRIBUTARY_KAFKA_DATA:-$dir/data}")
wait_seconds=${KAFKA_WAIT_SECONDS:-120}
stop_seconds=${KAFKA_STOP_SECONDS:-60}
node_id=${KAFKA_NODE_ID:-1}
voters=${KAFKA_QUORUM_VOTERS:-$node_id@127.0.0.1:$controller_port}

die() {
	echo "kafka.sh: $*" >&2
	exit 1
}
say() { echo "kafka.sh: $*" >&2; }

java_bin() { bash "$here/zk.sh" java; }

pom_sum() { sha256sum "$here/kafka/pom.xml" | cut -d' ' -f1; }

fetch() {
	local java tmp
	if [ -f "$lib/.pom.sha256" ] && [ "$(cat "$lib/.pom.sha256")" = "$(pom_sum)" ]; then
		return
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven (Debian package maven)"
	java=$(java_bin)
	say "fetching Apache Kafka jars with Maven into $lib"
	mkdir -p "$(dirname "$lib")"
	tmp=$(mktemp -d "$lib.XXXXXX")
	# Into a temp dir first: an interrupted fetch must not look complete.
	if ! JAVA_HOME=$(dirname "$(dirname "$java")") mvn -B -q -Dstyle.color=never -f "$here/kafka/pom.xml" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >&2; then
		rm -rf "$tmp"
		die "Maven could not fetch the Kafka jars (see above)"
	fi
	pom_sum >"$tmp/.pom.sha256"
	rm -rf "$lib"
	mv "$tmp" "$lib"
}

# alive: the broker of this state dir runs (command-line check against a
# recycled pid, state check against an unreaped zombie).
alive() {
	local pid state
	[ -f "$dir/kafka.pid" ] || return 1
	pid=$(cat "$dir/kafka.pid")
	[ -r "/proc/$pid/cmdline" ] || return 1
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
	[ "$state" != Z ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir/server.properties"
}

serving() {
	# Any count: in a cluster, the other nodes may have registered already.
	kcat -L -b "127.0.0.1:$port" -m 3 2>/dev/null | grep -qE ' [1-9][0-9]* brokers:'
}

configure() {
	local listeners=PLAINTEXT://127.0.0.1:$port protocols=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
	if [ -n "$keystore" ]; then
		[ -r "$keystore" ] || die "KAFKA_SSL_KEYSTORE '$keystore' cannot be read"
		listeners=$listeners,SASL_SSL://127.0.0.1:$sasl_ssl_port
		protocols=$protocols,SASL_SSL:SASL_SSL
	fi
	local advertised=$listeners link_port link_advertised
	if [ -n "${KAFKA_LINK_LISTENER:-}" ]; then
		read -r link_port link_advertised <<<"$KAFKA_LINK_LISTENER"
		[ -n "$link_advertised" ] || die "KAFKA_LINK_LISTENER '$KAFKA_LINK_LISTENER': want \"PORT HOST:PORT\""
		listeners=$listeners,LINK://127.0.0.1:$link_port
		advertised=$advertised,LINK://$link_advertised
		protocols=$protocols,LINK:PLAINTEXT
	fi
	mkdir -p "$dir/logs" "$data"
	cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=$node_id
controller.quorum.voters=$voters
listeners=$listeners,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=$advertised
listener.security.protocol.map=$protocols
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
	if [ -n "$keystore" ]; then
		cat >>"$dir/server.properties" <<EOF
sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$(realpath "$keystore")
EOF
	fi
	cat >"$dir/log4j.properties" <<EOF
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$dir/logs/server.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
EOF
}

start() {
	local java cluster_id deadline p
	if alive; then
		say "already running (pid $(cat "$dir/kafka.pid"), state in $dir)"
		echo "export TRIBUTARY_TEST_KAFKA=127.0.0.1:$port"
		return
	fi
	command -v kcat >/dev/null || die "kcat not found: run \`make deps\`"
	command -v nc >/dev/null || die "nc not found: run \`make deps\`"
	local ports=("$port" "$controller_port")
	[ -z "$keystore" ] || ports+=("$sasl_ssl_port")
	for p in "${ports[@]}"; do
		if nc -z -w 1 127.0.0.1 "$p" >/dev/null 2>&1; then
			die "port 127.0.0.1:$p is already in use (another Kafka? \`bash scripts/kafka.sh status\`; or set TRIBUTARY_TEST_PORT_OFFSET)"
		fi
	done
	fetch
	java=$(java_bin)
	configure
	local log4j=(-Dlog4j.configuration="file:$dir/log4j.properties" -Dkafka.logs.dir="$dir/logs")
	if [ ! -f "$data/meta.properties" ]; then
		cluster_id=${KAFKA_CLUSTER_ID:-$("$java" "${log4j[@]}" -cp "$lib/*" kafka.tools.StorageTool random-uuid)}
		local scram=() password m
		if [ -n "$scram_user" ]; then
			password=$(cat "$scram_password_file") || die "KAFKA_SCRAM_PASSWORD_FILE '$scram_password_file' cannot be read"
			for m in SCRAM-SHA-256 SCRAM-SHA-512; do
				scram+=(--add-scram "$m=[name=$scram_user,password=$password]")
			done
		fi
		"$java" "${log4j[@]}" -cp "$lib/*" kafka.tools.StorageTool format \
			-t "$cluster_id" -c "$dir/server.properties" "${scram[@]}" >"$dir/logs/format.out" 2>&1 ||
			{ cat "$dir/logs/format.out" >&2; die "formatting $data failed"; }
	fi
	# shellcheck disable=SC2086
	"$java" ${KAFKA_HEAP_OPTS:--Xmx1g -Xms1g} -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
		-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 \
		-Djava.awt.headless=true "${log4j[@]}" -cp "$lib/*" kafka.Kafka "$dir/server.properties" \
		</dev/null >"$dir/logs/kafka.out" 2>&1 &
	echo $! >"$dir/kafka.pid"
	deadline=$((SECONDS + wait_seconds))
	until serving; do
		if ! alive; then
			tail -n 30 "$dir/logs/kafka.out" "$dir/logs/server.log" >&2 2>/dev/null || true
			die "Kafka exited before serving on 127.0.0.1:$port"
		fi
		if [ $SECONDS -ge $deadline ]; then
			tail -n 30 "$dir/logs/server.log" >&2 2>/dev/null || true
			die "Kafka not serving on 127.0.0.1:$port after ${wait_seconds}s (still running, pid $(cat "$dir/kafka.pid"); \`bash scripts/kafka.sh stop\`)"
		fi
		sleep 0.2
	done
	if [ -n "$keystore" ]; then
		say "Apache Kafka serving on 127.0.0.1:$port and SASL_SSL 127.0.0.1:$sasl_ssl_port (state in $dir, data in $data)"
	else
		say "Apache Kafka serving on 127.0.0.1:$port (state in $dir, data in $data)"
	fi
	echo "export TRIBUTARY_TEST_KAFKA=127.0.0.1:$port"
}

stop() {
	local pid deadline
	if ! alive; then
		rm -f "$dir/kafka.pid"
		return
	fi
	pid=$(cat "$dir/kafka.pid")
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$((SECONDS + stop_seconds))
	while alive; do
		if [ $SECONDS -ge $deadline ]; then
			say "pid $pid still running ${stop_seconds}s after SIGTERM; killing it"
			kill -KILL "$pid" 2>/dev/null || true
			deadline=$((SECONDS + 30))
		fi
		sleep 0.1
	done
	rm -f "$dir/kafka.pid"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
fetch) fetch ;;
start) start ;;
stop) stop ;;
status)
	if alive; then
		echo "kafka 127.0.0.1:$port pid $(cat "$dir/kafka.pid") $(serving && echo serving || echo not-serving)"
	else
		echo "kafka 127.0.0.1:$port stopped"
	fi
	;;
run)
	[ $# -gt 0 ] || die "run needs a Java class name"
	fetch
	exec "$(java_bin)" -Xmx512m -Dlog4j.configuration="file:$here/kafka/tools-log4j.properties" \
		-cp "$lib/*" "$@"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
