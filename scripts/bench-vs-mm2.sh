#!/usr/bin/env bash
# bench-vs-mm2.sh: Apache Kafka's MirrorMaker 2 (dedicated mode) and
# `tributary mirror`, one after the other, mirroring the same records between
# the same two Apache Kafka brokers (source and target, KRaft, scripts/kafka.sh),
# and one table: records/s from the mirror's start until the target holds
# every record, and the mirror process's CPU-seconds (user+system, from
# /proc), with ratios (tributary / MirrorMaker 2).
#
# Apache Kafka sources are what MirrorMaker 2 needs (its Connect worker group
# and compacted internal topics live on the target); `tributary mirror` runs
# against them with the Kafka group protocol.
#
# Environment:
#   MM2_RECORDS      records produced once to the source (default 2000000)
#   MM2_RECORD_SIZE  bytes per record (default 100)
#   MM2_PARTITIONS   partitions of the topic (default 12)
#   MM2_TASKS        MirrorMaker 2 tasks.max (default 2, one per core)
#   MM2_DIR          work dir: brokers' data, configs, logs (default: a temp
#                    dir, removed afterwards unless MM2_KEEP=1)
# Ports: source 127.0.0.1:19292 (+19293), target 127.0.0.1:19392 (+19393),
# each plus TRIBUTARY_TEST_PORT_OFFSET. The MirrorMaker 2 jars
# (org.apache.kafka:connect-mirror, same version as the broker) are fetched
# with Maven into .cache/mm2/lib once.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"

records=${MM2_RECORDS:-2000000}
size=${MM2_RECORD_SIZE:-100}
partitions=${MM2_PARTITIONS:-12}
tasks=${MM2_TASKS:-2}
offset=${TRIBUTARY_TEST_PORT_OFFSET:-0}
src_offset=$((offset + 200))
dst_offset=$((offset + 300))
src=127.0.0.1:$((19092 + src_offset))
dst=127.0.0.1:$((19092 + dst_offset))
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/kafka/pom.xml")
lib=$repo/.cache/mm2/lib
tributary=$repo/bin/tributary
clk=$(getconf CLK_TCK)

die() {
	echo "bench-vs-mm2: $*" >&2
	exit 1
}
say() { echo "bench-vs-mm2: $*" >&2; }

[ -x "$tributary" ] || die "$tributary missing: run make build"
command -v kcat >/dev/null || die "kcat not found: run \`make deps\`"
java=$(bash "$here/zk.sh" java)

work=${MM2_DIR:-$(mktemp -d)}
mkdir -p "$work"
cleanup() {
	[ -n "${mirror_pid:-}" ] && kill -KILL "$mirror_pid" 2>/dev/null || true
	TRIBUTARY_KAFKA_DIR=$work/source TRIBUTARY_TEST_PORT_OFFSET=$src_offset bash "$here/kafka.sh" stop || true
	TRIBUTARY_KAFKA_DIR=$work/target TRIBUTARY_TEST_PORT_OFFSET=$dst_offset bash "$here/kafka.sh" stop || true
	if [ -z "${MM2_DIR:-}" ] && [ "${MM2_KEEP:-}" != 1 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# fetch_mm2 copies connect-mirror and its dependencies into $lib once.
fetch_mm2() {
	if [ -f "$lib/.version" ] && [ "$(cat "$lib/.version")" = "$kafka_version" ]; then
		return
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven (Debian package maven)"
	mkdir -p "$repo/.cache/mm2"
	local tmp
	tmp=$(mktemp -d "$repo/.cache/mm2/lib.XXXXXX")
	cat >"$tmp/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.tributary.bench</groupId>
  <artifactId>mirrormaker2</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-mirror</artifactId><version>$kafka_version</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$kafka_version</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
	say "fetching MirrorMaker 2 $kafka_version (connect-mirror) with Maven into $lib"
	if ! JAVA_HOME=$(dirname "$(dirname "$java")") mvn -B -q -Dstyle.color=never -f "$tmp/pom.xml" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/lib" >&2; then
		rm -rf "$tmp"
		die "Maven could not fetch connect-mirror (see above)"
	fi
	echo "$kafka_version" >"$tmp/lib/.version"
	rm -rf "$lib"
	mv "$tmp/lib" "$lib"
	rm -rf "$tmp"
}

# end_total prints the sum of a topic's end offsets on a broker (0 when the
# topic does not exist yet).
end_total() {
	local broker=$1 topic=$2 args=() p
	for ((p = 0; p < partitions; p++)); do args+=(-t "$topic:$p:-1"); done
	kcat -Q -b "$broker" "${args[@]}" 2>/dev/null |
		awk '/offset/ { for (i = 1; i < NF; i++) if ($i == "offset") s += $(i + 1) } END { print s + 0 }'
}

# cpu_seconds prints a process's user+system CPU time.
cpu_seconds() {
	awk -v clk="$clk" '{ printf "%.2f", ($14 + $15) / clk }' "/proc/$1/stat"
}

# measure PID TOPIC: waits until the target's TOPIC holds every record and
# prints "<seconds> <cpu-seconds>" of the process.
measure() {
	local pid=$1 topic=$2 start=$3 now cpu
	local deadline=$((SECONDS + 1800))
	while :; do
		[ -r "/proc/$pid/stat" ] || die "mirror (pid $pid) exited before the target held every record; see $work"
		cpu=$(cpu_seconds "$pid")
		if [ "$(end_total "$dst" "$topic")" -ge "$records" ]; then
			now=$(date +%s.%N)
			echo "$(awk -v a="$now" -v b="$start" 'BEGIN { print a - b }') $cpu"
			return
		fi
		[ $SECONDS -lt $deadline ] || die "target $topic incomplete after 30 minutes"
		sleep 0.2
	done
}

fetch_mm2
bash "$here/kafka.sh" fetch
say "starting source ($src) and target ($dst) Apache Kafka $kafka_version brokers in $work"
KAFKA_HEAP_OPTS="-Xmx512m -Xms512m" TRIBUTARY_KAFKA_DIR=$work/source TRIBUTARY_TEST_PORT_OFFSET=$src_offset bash "$here/kafka.sh" start >/dev/null
KAFKA_HEAP_OPTS="-Xmx512m -Xms512m" TRIBUTARY_KAFKA_DIR=$work/target TRIBUTARY_TEST_PORT_OFFSET=$dst_offset bash "$here/kafka.sh" start >/dev/null

say "creating topic bench ($partitions partitions) and producing $records x $size B records"
"$tributary" topics create --bootstrap "$src" --topic bench --partitions "$partitions" >/dev/null
bash "$here/kafka.sh" run org.apache.kafka.tools.ProducerPerformance --topic bench \
	--num-records "$records" --record-size "$size" --throughput -1 \
	--producer-props bootstrap.servers="$src" acks=1 linger.ms=5 batch.size=65536 >"$work/produce.out" 2>&1 ||
	{ cat "$work/produce.out" >&2; die "producing failed"; }
[ "$(end_total "$src" bench)" -ge "$records" ] || die "source holds $(end_total "$src" bench) records, want $records"

# MirrorMaker 2, dedicated mode: source -> target, topic bench -> source.bench.
cat >"$work/mm2.properties" <<PROPS
clusters = source, target
source.bootstrap.servers = $src
target.bootstrap.servers = $dst
source->target.enabled = true
source->target.topics = bench
target->source.enabled = false
tasks.max = $tasks
replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
sync.topic.acls.enabled = false
PROPS
cat >"$work/mm2-log4j.properties" <<PROPS
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$work/mm2.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=[%d] %p %m (%c)%n
PROPS
say "MirrorMaker 2 (tasks.max=$tasks)"
start=$(date +%s.%N)
"$java" -Xmx1g -Xms1g -server -XX:+UseG1GC -Dlog4j.configuration="file:$work/mm2-log4j.properties" \
	-cp "$lib/*" org.apache.kafka.connect.mirror.MirrorMaker "$work/mm2.properties" >"$work/mm2.out" 2>&1 &
mirror_pid=$!
read -r mm2_secs mm2_cpu < <(measure "$mirror_pid" source.bench "$start")
kill -TERM "$mirror_pid" 2>/dev/null || true
wait "$mirror_pid" 2>/dev/null || true
mirror_pid=

cat >"$work/mirror.properties" <<PROPS
source.source.bootstrap.servers=$src
target.bootstrap.servers=$dst
topics=bench
group.id=tributary-mirror-bench
PROPS
say "tributary mirror"
start=$(date +%s.%N)
"$tributary" mirror --config "$work/mirror.properties" >"$work/tributary-mirror.log" 2>&1 &
mirror_pid=$!
read -r trib_secs trib_cpu < <(measure "$mirror_pid" bench "$start")
kill -TERM "$mirror_pid" 2>/dev/null || true
wait "$mirror_pid" 2>/dev/null || true
mirror_pid=

awk -v n="$records" -v size="$size" -v ms="$mm2_secs" -v mc="$mm2_cpu" -v ts="$trib_secs" -v tc="$trib_cpu" 'BEGIN {
	printf "\nmirroring %d x %d B records, Apache Kafka source -> Apache Kafka target\n\n", n, size
	printf "| %-18s | %12s | %10s | %12s |\n", "", "records/s", "seconds", "CPU-seconds"
	printf "|%s|%s|%s|%s|\n", "--------------------", "--------------", "------------", "--------------"
	printf "| %-18s | %12.0f | %10.1f | %12.1f |\n", "MirrorMaker 2", n / ms, ms, mc
	printf "| %-18s | %12.0f | %10.1f | %12.1f |\n", "tributary mirror", n / ts, ts, tc
	printf "| %-18s | %11.2fx | %9.2fx | %11.2fx |\n", "ratio (trib / MM2)", (n / ts) / (n / ms), ts / ms, tc / mc
}'
